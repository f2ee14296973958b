import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { DeferredContextError } from './errors/deferred-context.error';
import type { DeferredScope } from './request-scope/deferred-scope.interface';
import { DEFERRED_SCOPE } from './request-scope/request-scope.constants';
import { findOpener } from './request-scope/runtime-registry';

/**
 * What `@Deferred()` runs for each request: the request's scope, opening it if no interceptor did.
 * Exported for `@AfterResponse()`, which checks whether a route uses `@Deferred()`.
 */
export function deferredParamFactory(_data: unknown, context: ExecutionContext): DeferredScope {
  const request = context.getArgByIndex<Record<symbol, DeferredScope | undefined> | undefined>(0);
  const where = () => `${context.getClass().name}.${context.getHandler().name}()`;
  if (context.getType() !== 'http' || !request) throw new DeferredContextError(where(), context.getType());
  const existing = request[DEFERRED_SCOPE];
  if (existing) return existing;
  const opener = findOpener(request);
  if (!opener) throw new DeferredContextError(where());
  return opener.open(request, context.getArgByIndex<object>(1), context.getHandler(), context.getClass());
}

/**
 * Injects the current request's {@link DeferredScope}. On an `@AfterResponse()` route its items
 * wait for the response to finish; elsewhere they go straight to the dispatcher. Needs no
 * interceptor: resolving this parameter opens the request's scope.
 */
export const Deferred = createParamDecorator(deferredParamFactory);
