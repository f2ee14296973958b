import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor, Optional } from '@nestjs/common';
import { Observable, tap } from 'rxjs';
import { DeferredAsyncContext } from './request-scope/async-context';
import { RequestCollector } from './request-scope/request-collector';
import { ScopeOpener } from './request-scope/scope-opener';

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
    const scope = this.opener.open(request, context.getArgByIndex<object>(1), context.getHandler(), context.getClass());
    if (!(scope instanceof RequestCollector)) return next.handle();
    let handled: () => Observable<unknown> = () => next.handle();
    if (scope.measures && !scope.timingStarted) {
      scope.startTiming(String((request as { method?: unknown }).method ?? 'GET'));
      const done = () => scope.handlerDone();
      handled = () => next.handle().pipe(tap({ next: done, error: done, complete: done }));
    }
    const asyncContext = this.asyncContext;
    if (!asyncContext) return handled();
    return new Observable((subscriber) => asyncContext.run(scope, () => handled().subscribe(subscriber)));
  }
}
