/**
 * The deferred route of a scenario written with the deferred handles — what a team migrating from
 * `@InjectQueue()`, `new Logger()` and `@InjectMetric()` writes — the same items as `deferred`:
 *
 * - `GET /<scenario>/deferred-handle`: the handles as handler parameters (`@Deferred.queue()`,
 *   `@Deferred.logger()`, `@Deferred.metric()`), bound to the request, no async context;
 * - `GET /<scenario>/deferred-injected` (only on a server started with `BENCH_INJECTED=1`): the handles
 *   injected into a service (`@InjectDeferredQueue()`, `new DeferredLogger()`, `@InjectDeferredMetric()`),
 *   which turns the async context on for that whole server (and its global interceptor).
 */
import { Controller, Get, Inject, Injectable, type Type } from '@nestjs/common';
import { AfterResponse, Deferred, DeferredLogger, InjectDeferredMetric, InjectDeferredQueue } from 'nestjs-deferred-work';
import type { ScenarioId } from '../bench/types.js';
import { countHandled, routeKey } from './counters.js';
import type { HandleSet, ScenarioEffect, ScenarioHandles } from './effects.js';

const OK = { ok: true } as const;

/** The parameters a scenario's handles take, in order: the queue, the logger, then each metric. */
function handleSet(handles: ScenarioHandles, args: unknown[]): HandleSet {
  let i = 0;
  const set: HandleSet = { metrics: {} };
  if (handles.queue) set.queue = args[i++] as HandleSet['queue'];
  if (handles.logger) set.logger = args[i++] as HandleSet['logger'];
  for (const name of handles.metrics ?? []) set.metrics[name] = args[i++] as HandleSet['metrics'][string];
  return set;
}

/** Applies `decorators` to the method's parameters 0, 1, … (what writing them in the signature does). */
function decorateParams(target: object, method: string, decorators: ParameterDecorator[]): void {
  decorators.forEach((decorate, index) => decorate(target, method, index));
}

/** `GET /<scenario>/deferred-handle`, or `undefined` for a scenario without handles. */
export function handleController(id: ScenarioId, effect: ScenarioEffect): Type<unknown> | undefined {
  const handles = effect.handles;
  if (!handles) return undefined;
  const key = routeKey(id, 'deferred-handle');

  @Controller(id)
  class HandleController {
    deferredHandle(...args: unknown[]) {
      countHandled(key);
      handles!.defer(handleSet(handles!, args));
      return OK;
    }
  }
  // In the order TypeScript applies them when written in the signature: the parameters first, then
  // @AfterResponse() (which binds no interceptor to a route whose parameters open the scope), then @Get().
  decorateParams(HandleController.prototype, 'deferredHandle', [
    ...(handles.queue ? [Deferred.queue(handles.queue)] : []),
    ...(handles.logger ? [Deferred.logger('Bench')] : []),
    ...(handles.metrics ?? []).map((name) => Deferred.metric(name)),
  ]);
  const descriptor = Object.getOwnPropertyDescriptor(HandleController.prototype, 'deferredHandle')!;
  AfterResponse(effect.afterResponse)(HandleController.prototype, 'deferredHandle', descriptor);
  Get('deferred-handle')(HandleController.prototype, 'deferredHandle', descriptor);
  Object.defineProperty(HandleController, 'name', { value: `HandleController_${id.replace(/\W/g, '_')}` });
  return HandleController;
}

/** `GET /<scenario>/deferred-injected` and its service, on a `BENCH_INJECTED=1` server, for a scenario with handles. */
export function injectedController(id: ScenarioId, effect: ScenarioEffect): { controller: Type<unknown>; service: Type<unknown> } | undefined {
  const handles = effect.handles;
  if (!handles || process.env.BENCH_INJECTED !== '1') return undefined;
  const key = routeKey(id, 'deferred-injected');

  @Injectable()
  class HandlesService {
    private readonly set: HandleSet;

    constructor(...args: unknown[]) {
      const injected = [...args];
      if (handles!.logger) injected.splice(handles!.queue ? 1 : 0, 0, new DeferredLogger('Bench'));
      this.set = handleSet(handles!, injected);
    }

    defer(): void {
      handles!.defer(this.set);
    }
  }
  decorateParams(HandlesService, undefined as never, [
    ...(handles.queue ? [InjectDeferredQueue(handles.queue)] : []),
    ...(handles.metrics ?? []).map((name) => InjectDeferredMetric(name)),
  ]);
  Object.defineProperty(HandlesService, 'name', { value: `HandlesService_${id.replace(/\W/g, '_')}` });

  @Controller(id)
  class InjectedController {
    constructor(@Inject(HandlesService) private readonly service: HandlesService) {}

    @Get('deferred-injected')
    @AfterResponse(effect.afterResponse)
    deferredInjected() {
      countHandled(key);
      this.service.defer();
      return OK;
    }
  }
  Object.defineProperty(InjectedController, 'name', { value: `InjectedController_${id.replace(/\W/g, '_')}` });
  return { controller: InjectedController, service: HandlesService };
}
