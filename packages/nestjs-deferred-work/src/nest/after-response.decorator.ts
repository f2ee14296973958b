import { SetMetadata, UseInterceptors } from '@nestjs/common';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from '../capture/after-response.metadata';
import { deferredParamFactory } from './deferred.decorator';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';

export { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from '../capture/after-response.metadata';

/** Nest's keys for route parameter metadata and bound interceptors (stable since Nest 8). */
const ROUTE_ARGS_METADATA = '__routeArguments__';
const INTERCEPTORS_METADATA = '__interceptors__';

/** Whether a route method takes a `@Deferred()` parameter (parameter decorators apply before method ones). */
function usesDeferredParam(cls: object, method: string | symbol): boolean {
  // Reflect.getMetadata walks the constructor chain, as Nest does for inherited route arguments.
  const params = Reflect.getMetadata(ROUTE_ARGS_METADATA, cls, method) as Record<string, { factory?: unknown }> | undefined;
  return Object.values(params ?? {}).some((param) => param.factory === deferredParamFactory);
}

/**
 * Whether every route of a controller, own or inherited, takes `@Deferred()` — and there is at least
 * one (a base class without routes may get them from subclasses, which this decorator cannot see).
 * Accessors are skipped without being called, as Nest's MetadataScanner does.
 */
function allRoutesTakeDeferred(cls: Function & { prototype: object }): boolean {
  let routes = 0;
  const seen = new Set<string>();
  for (let proto: object | null = cls.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      const method = descriptor?.value as unknown;
      if (typeof method !== 'function' || Reflect.getMetadata('path', method) === undefined) continue;
      routes++;
      if (!usesDeferredParam(cls, name)) return false;
    }
  }
  return routes > 0;
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
 * and on a route with `timing`, this decorator also binds `DeferredWorkInterceptor`. On a class, it
 * binds it to the whole class unless every route (own and inherited) takes `@Deferred()`.
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
    const cls = target as Function & { prototype: object };
    setMetadata(cls as never);
    if (!bindsInterceptor(cls) && (options.timing || !allRoutesTakeDeferred(cls))) intercept(cls as never);
    return target;
  }) as ClassDecorator & MethodDecorator;
}
