/**
 * A stand-in for an object the app registered (a queue, a microservice client): `own` members are the
 * handle's, everything else is read from the real object — found on first use, so the handle can be
 * built before it — with its methods bound to it (so `this` is the real object, private fields
 * included). `instanceof` sees the real object's class. When there is no real object, calling one of
 * its members throws `missing()` (reading one gives that throwing function: Nest's discovery and
 * other inspectors read members of every provider, and must not fail).
 */
/**
 * Nest's lifecycle hooks: a handle is a provider of its own, and must not answer for the real object's
 * hooks (Nest would run them twice — closing a queue twice at shutdown — or on an object not there).
 */
const NEST_HOOKS = new Set<PropertyKey>(['onModuleInit', 'onApplicationBootstrap', 'onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown']);

export function passthrough<T extends object>(own: Record<PropertyKey, unknown>, real: () => object | undefined, missing: () => Error): T {
  const bound = new Map<PropertyKey, { from: unknown; fn: unknown }>();
  return new Proxy({}, {
    get(_target, prop) {
      if (Object.prototype.hasOwnProperty.call(own, prop)) return own[prop];
      if (NEST_HOOKS.has(prop)) return undefined;
      // never a thenable (Nest awaits a handler's parameters: no lookup of the real object for that)
      if (prop === 'then') return undefined;
      const object = real();
      if (object === undefined) {
        if (prop === 'constructor') return Object;
        if (typeof prop === 'symbol') return undefined; // inspect and friends
        return () => {
          throw missing();
        };
      }
      const value = Reflect.get(object, prop, object) as unknown;
      if (typeof value !== 'function') return value;
      const cached = bound.get(prop);
      if (cached && cached.from === value) return cached.fn;
      const fn = (value as (...args: unknown[]) => unknown).bind(object);
      bound.set(prop, { from: value, fn });
      return fn;
    },
    has(_target, prop) {
      if (Object.prototype.hasOwnProperty.call(own, prop)) return true;
      if (NEST_HOOKS.has(prop)) return false;
      const object = real();
      return object !== undefined && prop in object;
    },
    getPrototypeOf() {
      const object = real();
      return object === undefined ? Object.prototype : Object.getPrototypeOf(object);
    },
    set(_target, prop, value) {
      const object = real();
      if (object === undefined) throw missing();
      return Reflect.set(object, prop, value, object);
    },
  }) as unknown as T;
}
