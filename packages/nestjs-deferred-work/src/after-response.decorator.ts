import { SetMetadata, UseInterceptors } from '@nestjs/common';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './after-response.metadata';
import { deferredParamFactory } from './deferred.decorator';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';

export { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from './after-response.metadata';

/** Nest's keys for route parameter metadata and bound interceptors (stable since Nest 8). */
const ROUTE_ARGS_METADATA = '__routeArguments__';
const INTERCEPTORS_METADATA = '__interceptors__';

/** Whether a route method takes a `@Deferred()` parameter (parameter decorators apply before method ones). */
function usesDeferredParam(cls: object, method: string | symbol): boolean {
  const params = Reflect.getMetadata(ROUTE_ARGS_METADATA, cls, method) as Record<string, { factory?: unknown }> | undefined;
  return Object.values(params ?? {}).some((param) => param.factory === deferredParamFactory);
}

function bindsInterceptor(target: object): boolean {
  const bound = Reflect.getMetadata(INTERCEPTORS_METADATA, target) as unknown[] | undefined;
  return bound?.includes(DeferredWorkInterceptor) ?? false;
}

/**
 * Hold the work a handler defers until its response has finished, then flush it to the sinks. On a
 * controller class it applies to every route; a method's options override the class's, kind by kind.
 *
 * A route that takes `@Deferred()` needs no interceptor (resolving the parameter opens the request's
 * scope). On a route that does not — one that uses `DeferredWork.forRequest(req)` or `asyncContext` —
 * and on a route with `timing`, this decorator also binds `DeferredWorkInterceptor`.
 *
 * @example
 * ```ts
 * @Post('orders')
 * @AfterResponse()
 * create(@Body() dto: OrderDto, @Deferred() work: DeferredScope) {
 *   work.job('mail', 'order-confirmation', { orderId: dto.id });
 *   return { ok: true };
 * }
 * ```
 */
export function AfterResponse(options: AfterResponseOptions = {}): ClassDecorator & MethodDecorator {
  const setMetadata = SetMetadata(AFTER_RESPONSE_METADATA, options);
  const intercept = UseInterceptors(DeferredWorkInterceptor);
  return ((target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor && key !== undefined) {
      setMetadata(target, key, descriptor);
      const method = descriptor.value as object;
      if ((options.timing || !usesDeferredParam(target.constructor, key)) && !bindsInterceptor(method)) {
        intercept(target, key, descriptor);
      }
      return descriptor;
    }
    const cls = target as { prototype: Record<string, unknown> };
    setMetadata(cls as never);
    if (options.timing) {
      if (!bindsInterceptor(cls)) intercept(cls as never);
      return target;
    }
    for (const name of Object.getOwnPropertyNames(cls.prototype)) {
      if (name === 'constructor') continue;
      const method = cls.prototype[name];
      const route = typeof method === 'function' && Reflect.getMetadata('path', method) !== undefined;
      if (route && !usesDeferredParam(cls, name) && !bindsInterceptor(method as object)) {
        const described = Object.getOwnPropertyDescriptor(cls.prototype, name)!;
        intercept(cls.prototype, name, described);
      }
    }
    return target;
  }) as ClassDecorator & MethodDecorator;
}
