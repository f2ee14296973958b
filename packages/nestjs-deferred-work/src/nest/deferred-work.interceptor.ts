import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor, Optional } from '@nestjs/common';
import { Observable, tap } from 'rxjs';
import { DeferredAsyncContext } from '../capture/async-context';
import { RequestCollector } from '../capture/request-collector';
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
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
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

  private timed(next: CallHandler, scope: RequestCollector): Observable<unknown> {
    const done = () => scope.handlerDone();
    return next.handle().pipe(tap({ next: done, error: done, complete: done }));
  }
}
