import type { ExecutionContext } from '@nestjs/common';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import { scopeOutsideHttp } from '../capture/handler-scopes';
import { scopeOpenedFor } from '../capture/request-scopes';
import { findOpener } from '../capture/runtime-registry';
import { DeferredContextError } from '../core/errors/deferred-context.error';

/**
 * What `@Deferred()` runs for each request: the request's scope, opening it if no interceptor did.
 * The deferred handles' parameter decorators (`@Deferred.queue()`, …) run it too.
 */
export function deferredParamFactory(_data: unknown, context: ExecutionContext): DeferredScope {
  const request = context.getArgByIndex<object | undefined>(0);
  const handler = context.getHandler();
  if (context.getType() === 'http' && request) {
    const opened = scopeOpenedFor(request, handler);
    if (opened !== undefined) return opened;
    const opener = findOpener(request);
    if (opener) return opener.open(request, context.getArgByIndex<object>(1), handler, context.getClass());
  } else if (context.getType<string>() === 'graphql' || context.getType() === 'rpc') {
    const scope = scopeOutsideHttp(context.getType<'graphql' | 'rpc'>(), context.getArgs(), handler, context.getClass());
    if (scope !== undefined) return scope;
  }
  throw new DeferredContextError(`${context.getClass().name}.${handler.name}()`, context.getType());
}

/**
 * The parameter factories that open the request's scope themselves (`@Deferred()` and the handles'
 * parameter decorators): `@AfterResponse()` binds no interceptor to a route that takes one of them.
 */
export const scopeParamFactories = new Set<unknown>([deferredParamFactory]);
