import { SetMetadata, UseInterceptors } from '@nestjs/common';
import { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from '../capture/after-response.metadata';
import { scopeParamFactories } from './deferred-param';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';

export { AFTER_RESPONSE_METADATA, type AfterResponseOptions } from '../capture/after-response.metadata';

/** Nest's keys for route parameter metadata and bound interceptors (stable since Nest 8). */
const ROUTE_ARGS_METADATA = '__routeArguments__';
const INTERCEPTORS_METADATA = '__interceptors__';

/** Whether a method is an HTTP route (Nest's route decorators record its path). */
function isHttpRoute(method: object): boolean {
  return Reflect.getMetadata('path', method) !== undefined;
}

/** Whether a route method takes a `@Deferred()` parameter (parameter decorators apply before method ones). */
function usesDeferredParam(cls: object, method: string | symbol): boolean {
  // Reflect.getMetadata walks the constructor chain, as Nest does for inherited route arguments.
  const params = Reflect.getMetadata(ROUTE_ARGS_METADATA, cls, method) as Record<string, { factory?: unknown }> | undefined;
  return Object.values(params ?? {}).some((param) => scopeParamFactories.has(param.factory));
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
      if (typeof method !== 'function' || !isHttpRoute(method)) continue;
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

/** Metadata keys of @nestjs/graphql's resolver decorators and @nestjs/microservices' pattern decorators. */
const HANDLER_KEYS = ['graphql:resolver_type', 'graphql:resolver_name', 'microservices:pattern'];

/** Whether a method is a GraphQL resolver or a microservice handler (and not an HTTP route). */
export function isHandlerOutsideHttp(method: unknown): boolean {
  if (typeof method !== 'function' || isHttpRoute(method)) return false;
  return HANDLER_KEYS.some((key) => Reflect.getMetadata(key, method) !== undefined);
}

/**
 * A resolver or a message handler has no HTTP status to judge its outcome by: the interceptor watches
 * its result, so it is bound there even when the method takes `@Deferred()`. Whether a method is one is
 * known only once all its decorators ran, and they may sit above this one: decided in a microtask,
 * which runs when the class is defined, long before Nest scans the module.
 */
function bindOutsideHttp(cls: Function & { prototype: object }, key?: string | symbol): void {
  const intercept = UseInterceptors(DeferredWorkInterceptor);
  queueMicrotask(() => {
    const names = key !== undefined ? [key] : Object.getOwnPropertyNames(cls.prototype);
    if (key === undefined && bindsInterceptor(cls)) return;
    for (const name of names) {
      const descriptor = Object.getOwnPropertyDescriptor(cls.prototype, name);
      const method = descriptor?.value as object | undefined;
      if (!descriptor || !isHandlerOutsideHttp(method) || bindsInterceptor(method!)) continue;
      intercept(cls.prototype, name, descriptor);
    }
  });
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
      } else {
        bindOutsideHttp(target.constructor as Function & { prototype: object }, key);
      }
      return descriptor;
    }
    const cls = target as Function & { prototype: object };
    setMetadata(cls as never);
    if (!bindsInterceptor(cls) && (options.timing || !allRoutesTakeDeferred(cls))) intercept(cls as never);
    else bindOutsideHttp(cls);
    return target;
  }) as ClassDecorator & MethodDecorator;
}
