import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor, Optional } from '@nestjs/common';
import { finalize, Observable, tap } from 'rxjs';
import { DeferredAsyncContext } from '../capture/async-context';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import { ResolverScope } from '../capture/graphql-collector';
import { HandlerScopes } from '../capture/handler-scopes';
import { RequestCollector, type RequestOutcome } from '../capture/request-collector';
import { ScopeOpener } from '../capture/scope-opener';

/**
 * Opens the request's scope before the handler runs, for what `@Deferred()` alone cannot do:
 * `asyncContext` (runs the handler inside the request's `AsyncLocalStorage` context), `timing`
 * (marks when the handler returned), and routes that reach their scope through
 * `DeferredWork.forRequest(req)`. `@AfterResponse()` binds it to the routes that need it; the module
 * registers it globally when `asyncContext` or `timing` is on. Any Nest interceptor costs its
 * request pipeline, so routes using `@Deferred()` go without one.
 */
@Injectable()
export class DeferredWorkInterceptor implements NestInterceptor {
  constructor(
    @Inject(ScopeOpener) private readonly opener: ScopeOpener,
    @Optional() @Inject(DeferredAsyncContext) private readonly asyncContext?: DeferredAsyncContext | null,
    @Optional() @Inject(HandlerScopes) private readonly handlerScopes?: HandlerScopes,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const type = context.getType<string>();
    if (type !== 'http') return this.outsideHttp(type, context, next);
    // getArgByIndex rather than switchToHttp(): the latter allocates three closures per call.
    const request = context.getArgByIndex<object>(0);
    const handler = context.getHandler();
    // Bound twice (globally and by @AfterResponse()): the first one did the work.
    if (ScopeOpener.isOpen(request, handler)) return next.handle();
    const scope = this.opener.open(request, context.getArgByIndex<object>(1), handler, context.getClass());
    if (!(scope instanceof RequestCollector)) return next.handle();
    const measured = scope.measures;
    if (measured) scope.startTiming(String((request as { method?: unknown }).method ?? 'GET'));
    const asyncContext = this.asyncContext;
    if (!asyncContext) return measured ? this.timed(next, scope) : next.handle();
    return new Observable((subscriber) =>
      asyncContext.run(scope, () => (measured ? this.timed(next, scope) : next.handle()).subscribe(subscriber)),
    );
  }

  /**
   * GraphQL resolvers: the request's shared scope, this call marked failed when the resolver throws or
   * its result errors. Microservice handlers: a scope per message, settled once the handler's stream
   * ended — after the transport was handed the reply (Nest sends it on the next tick; the items are
   * released on `setImmediate`, after that) — `success` when it completed, `failure` when it errored.
   */
  private outsideHttp(type: string, context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const scopes = this.handlerScopes;
    if (!scopes) return next.handle();
    if (type === 'graphql') {
      const scope = scopes.resolver(context.getArgs(), context.getHandler(), context.getClass());
      if (!(scope instanceof ResolverScope)) return next.handle();
      const failed = () => scope.collector.failed(scope.call);
      return this.within(scope, () => next.handle().pipe(tap({ error: failed })));
    }
    if (type === 'rpc') {
      const scope = scopes.message(context.getArgByIndex(1) ?? context.getArgByIndex(0), context.getHandler(), context.getClass());
      if (!(scope instanceof RequestCollector)) return next.handle();
      let outcome: RequestOutcome = 'aborted';
      const ended = () => setImmediate(() => scope.settleWith(outcome));
      return this.within(scope, () =>
        next.handle().pipe(
          tap({ complete: () => (outcome = 'success'), error: () => (outcome = 'failure') }),
          finalize(ended),
        ),
      );
    }
    return next.handle();
  }

  /** The stream, subscribed inside the scope's async context when `asyncContext` is on. */
  private within(scope: DeferredScope, stream: () => Observable<unknown>): Observable<unknown> {
    const asyncContext = this.asyncContext;
    if (!asyncContext) return stream();
    return new Observable((subscriber) => asyncContext.run(scope, () => stream().subscribe(subscriber)));
  }

  private timed(next: CallHandler, scope: RequestCollector): Observable<unknown> {
    const done = () => scope.handlerDone();
    return next.handle().pipe(tap({ next: done, error: done, complete: done }));
  }
}
