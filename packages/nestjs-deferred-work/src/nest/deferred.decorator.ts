import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { DeferredContextError } from '../core/errors/deferred-context.error';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import { scopeOpenedFor } from '../capture/request-scopes';
import { findOpener } from '../capture/runtime-registry';
import { scopeOutsideHttp } from '../capture/handler-scopes';

/**
 * What `@Deferred()` runs for each request: the request's scope, opening it if no interceptor did.
 * Exported for `@AfterResponse()`, which checks whether a route uses `@Deferred()`.
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
 * Injects the current request's {@link DeferredScope}. On an `@AfterResponse()` route its items
 * wait for the response to finish; elsewhere they go straight to the dispatcher. Needs no
 * interceptor: resolving this parameter opens the request's scope.
 */
export const Deferred = createParamDecorator(deferredParamFactory);
