import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable, tap } from 'rxjs';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './after-response.decorator';
import { Dispatcher } from './dispatch/dispatcher';
import { DeferredAsyncContext } from './request-scope/async-context';
import { DirectScope } from './request-scope/direct-scope';
import { RequestCollector } from './request-scope/request-collector';
import { DEFERRED_SCOPE } from './request-scope/request-scope.constants';
import { routeTemplate } from './request-scope/route-timing';
import type { RouteSettings } from './request-scope/scope-base';


/** The part of Node's `ServerResponse` the interceptor uses (Fastify's `reply.raw` is one). */
interface RawResponse {
  on(event: 'close', listener: () => void): unknown;
  readonly writableFinished: boolean;
  readonly closed?: boolean;
  readonly statusCode: number;
}

/**
 * Opens a collector for each `@AfterResponse()` request and settles it when the response has
 * finished (or the connection closed first). Undecorated routes pass straight through; the
 * metadata lookup is cached per handler.
 */
@Injectable()
export class DeferredWorkInterceptor implements NestInterceptor {
  /** Settings per class, then per handler: a handler inherited by two controllers has two entries. */
  private readonly routes = new WeakMap<object, WeakMap<object, RouteSettings | null>>();

  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Inject(DirectScope) private readonly direct: DirectScope,
    @Optional() @Inject(DeferredAsyncContext) private readonly asyncContext?: DeferredAsyncContext,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const settings = this.routeSettings(context);
    // getArgByIndex rather than switchToHttp(): the latter allocates three closures per call.
    const request = context.getArgByIndex<Record<symbol, unknown>>(0);
    if (settings === null || this.dispatcher.inline) {
      request[DEFERRED_SCOPE] = this.direct;
      return next.handle();
    }
    const collector = new RequestCollector(settings, this.dispatcher);
    request[DEFERRED_SCOPE] = collector;
    const reply = context.getArgByIndex<RawResponse & { raw?: RawResponse }>(1);
    const response = reply.raw ?? reply;
    // 'close' comes once, after 'finish' when the response completed, or alone when the client left.
    if (response.closed) collector.settle(response.writableFinished, response.statusCode);
    else response.on('close', () => collector.settle(response.writableFinished, response.statusCode));
    let handled: () => Observable<unknown> = () => next.handle();
    if (settings.timing) {
      collector.startTiming(String((request as { method?: unknown }).method ?? 'GET'));
      const done = () => collector.handlerDone();
      handled = () => next.handle().pipe(tap({ next: done, error: done, complete: done }));
    }
    const asyncContext = this.asyncContext;
    if (!asyncContext) return handled();
    return new Observable((subscriber) => asyncContext.run(collector, () => handled().subscribe(subscriber)));
  }

  private routeSettings(context: ExecutionContext): RouteSettings | null {
    const handler = context.getHandler();
    const cls = context.getClass();
    let byHandler = this.routes.get(cls);
    if (!byHandler) this.routes.set(cls, (byHandler = new WeakMap()));
    let settings = byHandler.get(handler);
    if (settings === undefined) byHandler.set(handler, (settings = this.resolveRoute(handler, cls)));
    return settings;
  }

  /** The route's settings, or `null` when neither the handler nor its class is decorated. */
  resolveRoute(handler: object, cls: object): RouteSettings | null {
    const onClass = this.reflector.get<AfterResponseOptions | undefined>(AFTER_RESPONSE_METADATA, cls as never);
    const onHandler = this.reflector.get<AfterResponseOptions | undefined>(AFTER_RESPONSE_METADATA, handler as never);
    if (!onClass && !onHandler) return null;
    const timing = onHandler?.timing ?? onClass?.timing ?? this.dispatcher.options.timing;
    return {
      when: { ...this.dispatcher.options.when, ...onClass?.when, ...onHandler?.when },
      sinks: { ...onClass?.sinks, ...onHandler?.sinks },
      timing,
      path: timing ? routeTemplate(Reflect.getMetadata('path', cls), Reflect.getMetadata('path', handler)) : undefined,
    };
  }
}
