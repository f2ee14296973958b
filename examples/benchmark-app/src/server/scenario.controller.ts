/**
 * One controller per scenario: the same side-effect six ways (`GET /<scenario>/<variant>`), a
 * seventh, `deferred-offload`, where the scenario's sink can be offloaded (`offloadController`), and
 * `deferred-spool` where it has a spooled twin (`spoolController`). The
 * `deferred` route uses the library as an app would: `@AfterResponse()` and `@Deferred()`, which need
 * no interceptor (none is registered globally either), so `plain` runs with no interceptor at all and
 * `noop-interceptor` isolates what any Nest interceptor costs. `article-tap` and `event-emitter` are
 * the peers, written as their users write them (see their files).
 */
import { Controller, Get, Inject, type Type, UseInterceptors } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { AfterResponse, Deferred, type DeferredScope } from 'nestjs-deferred-work';
import type { ScenarioId, Variant } from '../bench/types.js';
import { articleTapInterceptor } from './article-tap.interceptor.js';
import { countHandled, routeKey, runEffect } from './counters.js';
import { type EffectEvent, effectEventName } from './effect.listener.js';
import type { ScenarioEffect } from './effects.js';
import { NoopInterceptor } from './noop.interceptor.js';

const OK = { ok: true } as const;

export function scenarioController(id: ScenarioId, effect: ScenarioEffect): Type<unknown> {
  const key = (variant: Variant) => routeKey(id, variant);
  const keys = {
    plain: key('plain'),
    noop: key('noop-interceptor'),
    blocking: key('blocking'),
    deferred: key('deferred'),
    articleTap: key('article-tap'),
    eventEmitter: key('event-emitter'),
  };
  const perform = () => effect.perform();
  const eventName = effectEventName(id);
  const event: EffectEvent = { scenario: id };

  @Controller(id)
  class ScenarioController {
    constructor(@Inject(EventEmitter2) private readonly eventEmitter: EventEmitter2) {}

    @Get('plain')
    plain() {
      countHandled(keys.plain);
      return OK;
    }

    @Get('noop-interceptor')
    @UseInterceptors(NoopInterceptor)
    noop() {
      countHandled(keys.noop);
      return OK;
    }

    @Get('blocking')
    async blocking() {
      countHandled(keys.blocking);
      await runEffect(keys.blocking, perform);
      return OK;
    }

    @Get('deferred')
    @AfterResponse(effect.afterResponse)
    deferred(@Deferred() work: DeferredScope) {
      countHandled(keys.deferred);
      effect.defer(work);
      return OK;
    }

    @Get('article-tap')
    @UseInterceptors(articleTapInterceptor(keys.articleTap, perform))
    articleTap() {
      countHandled(keys.articleTap);
      return OK;
    }

    @Get('event-emitter')
    emitEvent() {
      countHandled(keys.eventEmitter);
      this.eventEmitter.emit(eventName, event);
      return OK;
    }
  }
  Object.defineProperty(ScenarioController, 'name', { value: `Controller_${id.replace(/\W/g, '_')}` });
  return ScenarioController;
}

/**
 * The `deferred` route again under another path — the same decorators, the same items — with other
 * route options (its items routed to a twin of the scenario's sink). `undefined` without options.
 */
function twinController(id: ScenarioId, variant: Variant, effect: ScenarioEffect, options: ScenarioEffect['afterResponse'] | undefined, className: string): Type<unknown> | undefined {
  if (!options) return undefined;
  const key = routeKey(id, variant);

  @Controller(id)
  class TwinController {
    @Get(variant)
    @AfterResponse(options)
    deferredTwin(@Deferred() work: DeferredScope) {
      countHandled(key);
      effect.defer(work);
      return OK;
    }
  }
  Object.defineProperty(TwinController, 'name', { value: `${className}_${id.replace(/\W/g, '_')}` });
  return TwinController;
}

/**
 * `GET /<scenario>/deferred-offload`, the `deferred` route again — the same decorators, the
 * same items — routed to the offloaded twin of the scenario's sink, whose client work runs in a worker
 * thread. `undefined` for a scenario without one (it gets no such route).
 */
export function offloadController(id: ScenarioId, effect: ScenarioEffect): Type<unknown> | undefined {
  return twinController(id, 'deferred-offload', effect, effect.offloadAfterResponse, 'OffloadController');
}

/**
 * `GET /<scenario>/deferred-packed`, the `deferred` route again routed to the twin of the scenario's
 * queue sink that packs a write's jobs (`packJobs`). `undefined` for a scenario without one.
 */
export function packedController(id: ScenarioId, effect: ScenarioEffect): Type<unknown> | undefined {
  return twinController(id, 'deferred-packed', effect, effect.packedAfterResponse, 'PackedController');
}

/**
 * `GET /<scenario>/deferred-spool`, the `deferred` route again routed to the spooled twin of
 * the scenario's sink (each item appended to the disk spool when accepted, acked when delivered).
 * `undefined` for a scenario without one, or on a server without a spool directory.
 */
export function spoolController(id: ScenarioId, effect: ScenarioEffect): Type<unknown> | undefined {
  return twinController(id, 'deferred-spool', effect, effect.spoolAfterResponse, 'SpoolController');
}
