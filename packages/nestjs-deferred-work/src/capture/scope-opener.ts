import { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './after-response.metadata';
import { Dispatcher } from '../pipeline/dispatcher';
import { Correlator } from './correlation';
import type { DeferredScope } from './deferred-scope.interface';
import { DirectScope } from './direct-scope';
import { RequestCollector } from './request-collector';
import { RequestTracker } from './request-tracker';
import { rememberScope, scopeOpenedFor } from './request-scopes';
import { routeTemplate } from './route-timing';
import type { RouteSettings } from './scope-base';

/** The part of Node's `ServerResponse` used here (Fastify's `reply.raw` is one). */
interface RawResponse {
  on(event: 'close' | 'finish', listener: () => void): unknown;
  /** Its connection: a `net.Socket` when served by a Node server; a stand-in in an in-memory response. */
  readonly socket?: unknown;
  readonly writableFinished: boolean;
  readonly closed?: boolean;
  readonly statusCode: number;
}

/**
 * The Node response under a reply: Express passes it as it is; Fastify's reply holds it as `raw`.
 * `instanceof` first: on Express, reading a property the response lacks (`raw`) misses V8's caches
 * (each response has a hidden class of its own there) and costs more than walking its prototype chain.
 */
function responseOf(reply: object): RawResponse {
  return reply instanceof ServerResponse ? reply : ((reply as { raw?: RawResponse }).raw ?? (reply as RawResponse));
}

/**
 * A response no Node server serves: the in-memory responses of serverless adapters
 * (`@codegenie/serverless-express`, `@h4ad/serverless-adapter`) put a stand-in where the socket is;
 * they end with `finish` and never emit `close`, and their `writableFinished` stays false.
 */
function inMemory(response: RawResponse): boolean {
  const socket = response.socket;
  return socket !== null && socket !== undefined && !(socket instanceof Socket);
}

/**
 * @internal
 * Opens a request's scope, once: on an `@AfterResponse()` route a collector settled by the
 * response's `close` event (after `finish`, or alone when the client left), elsewhere the direct
 * scope. Used by `@Deferred()` — so a route needs no interceptor at all — and by
 * `DeferredWorkInterceptor` where one is bound. Route settings are cached per class and handler.
 */
@Injectable()
export class ScopeOpener {
  /** Settings per class, then per handler: a handler inherited by two controllers has two entries. */
  private readonly routes = new WeakMap<object, WeakMap<object, RouteSettings | null>>();

  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Inject(DirectScope) readonly direct: DirectScope,
    @Inject(RequestTracker) private readonly tracker: RequestTracker = new RequestTracker(),
    @Optional() @Inject(Correlator) private readonly correlator?: Correlator,
  ) {}

  /** Whether the request's scope is already open for this handler. */
  static isOpen(request: object, handler: object): boolean {
    return scopeOpenedFor(request, handler) !== undefined;
  }

  /**
   * The request's scope for `handler`, opening it on first use. A request that falls through to
   * another handler (Express `next()`) gets a new scope for it.
   */
  open(request: object, reply: object, handler: object, cls: object): DeferredScope {
    const opened = scopeOpenedFor(request, handler);
    if (opened !== undefined) return opened;
    const settings = this.settings(handler, cls);
    if (settings === null || this.dispatcher.inline) {
      rememberScope(request, handler, this.direct);
      return this.direct;
    }
    const correlator = this.correlator?.active ? this.correlator : undefined;
    const collector = new RequestCollector(settings, this.dispatcher, this.tracker, correlator?.forRequest(request), correlator);
    rememberScope(request, handler, collector);
    const response = responseOf(reply);
    if (response.closed) collector.settle(response.writableFinished, response.statusCode);
    else if (inMemory(response)) response.on('finish', () => collector.settle(true, response.statusCode));
    else response.on('close', () => collector.settle(response.writableFinished, response.statusCode));
    return collector;
  }

  /** The route's settings, or `null` when neither the handler nor its class is decorated. Cached. */
  settings(handler: object, cls: object): RouteSettings | null {
    let byHandler = this.routes.get(cls);
    if (!byHandler) this.routes.set(cls, (byHandler = new WeakMap()));
    let settings = byHandler.get(handler);
    if (settings === undefined) byHandler.set(handler, (settings = this.resolve(handler, cls)));
    return settings;
  }

  private resolve(handler: object, cls: object): RouteSettings | null {
    const onClass = this.reflector.get<AfterResponseOptions | undefined>(AFTER_RESPONSE_METADATA, cls as never);
    const onHandler = this.reflector.get<AfterResponseOptions | undefined>(AFTER_RESPONSE_METADATA, handler as never);
    if (!onClass && !onHandler) return null;
    const timing = onHandler?.timing ?? onClass?.timing ?? this.dispatcher.options.timing;
    return {
      when: { ...this.dispatcher.options.when, ...onClass?.when, ...onHandler?.when },
      sinks: { ...onClass?.sinks, ...onHandler?.sinks },
      timing,
      path: timing ? routeTemplate(Reflect.getMetadata('path', cls), Reflect.getMetadata('path', handler)) : undefined,
      handler: `${String((cls as { name?: unknown }).name)}.${String((handler as { name?: unknown }).name)}()`,
    };
  }
}
