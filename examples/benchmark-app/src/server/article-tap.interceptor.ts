/**
 * The `article-tap` variant: the side-effect in a route interceptor's `tap(async () => ...)`, as the
 * published "defer it in an interceptor" articles write it — kept as written, not improved: the work
 * starts when the handler's value passes the `tap` (before the response is written), its promise is
 * dropped (a rejection is unhandled), nothing bounds how many run at once and nothing waits for them
 * at shutdown. Only the counting (`runEffect`) is the benchmark's own.
 */
import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor, type Type } from '@nestjs/common';
import { type Observable, tap } from 'rxjs';
import { runEffect } from './counters.js';

/** A route interceptor class whose `tap` performs the side-effect, counted under `route`. */
export function articleTapInterceptor(route: string, perform: () => Promise<number>): Type<NestInterceptor> {
  const effect = () => runEffect(route, perform);

  @Injectable()
  class ArticleTapInterceptor implements NestInterceptor {
    intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
      return next.handle().pipe(
        tap(async () => {
          await effect();
        }),
      );
    }
  }
  Object.defineProperty(ArticleTapInterceptor, 'name', { value: `ArticleTapInterceptor_${route.replace(/\W/g, '_')}` });
  return ArticleTapInterceptor;
}
