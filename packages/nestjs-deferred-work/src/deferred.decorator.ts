import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { DeferredContextError } from './errors/deferred-context.error';
import { DEFERRED_SCOPE } from './request-scope/request-scope.constants';
import type { DeferredScope } from './request-scope/deferred-scope.interface';

/**
 * Injects the current request's {@link DeferredScope}. On an `@AfterResponse()` route its items
 * wait for the response to finish; elsewhere they go straight to the dispatcher.
 */
export const Deferred = createParamDecorator((_data: unknown, context: ExecutionContext): DeferredScope => {
  const request = context.getArgByIndex<Record<symbol, DeferredScope | undefined> | undefined>(0);
  const scope = context.getType() === 'http' ? request?.[DEFERRED_SCOPE] : undefined;
  if (!scope) throw new DeferredContextError(`${context.getClass().name}.${context.getHandler().name}()`, context.getType());
  return scope;
});
