import { SinkConfigError } from '../kit/sink-config.error';

/** Prototypes of what structured clone copies faithfully (besides plain objects and arrays). */
const CLONEABLE = new Set<unknown>([Date.prototype, RegExp.prototype, Map.prototype, Set.prototype, ArrayBuffer.prototype]);

function cloneable(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || Array.isArray(value) || CLONEABLE.has(proto) || ArrayBuffer.isView(value);
}

/**
 * Throws a {@link SinkConfigError} unless `value` is plain data a worker thread can receive as it is:
 * no functions, symbols or class instances (a live `Queue`, a Redis client, a logger), which structured
 * clone would refuse or silently turn into plain objects without their methods.
 */
export function checkPlainData(prefix: string, option: string, value: unknown, path = option, seen = new Set<object>()): void {
  if (typeof value === 'function' || typeof value === 'symbol') {
    throw new SinkConfigError(
      `${prefix}: ${path} is a ${typeof value}, which cannot be passed to a worker thread. Pass plain data (strings, numbers, ` +
        'objects, arrays) and build what needs code — a queue, a client, a callback — inside the sink module the worker loads.',
      option,
    );
  }
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  if (!cloneable(value)) {
    const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? 'an object with a prototype';
    throw new SinkConfigError(
      `${prefix}: ${path} is an instance of ${kind}, which would reach the worker thread as a plain object without its methods. ` +
        'Pass connection options instead (e.g. { host, port } or a URL) and let the worker create the object.',
      option,
    );
  }
  seen.add(value);
  let entries: Array<[unknown, unknown]>;
  try {
    entries = value instanceof Map ? [...value.entries()] : value instanceof Set ? [...value].map((v, i) => [i, v]) : Object.entries(value);
  } catch (error) {
    throw new SinkConfigError(`${prefix}: ${path} cannot be read (${(error as Error).message}). Pass plain data.`, option);
  }
  for (const [key, inner] of entries) {
    if (value instanceof Map) checkPlainData(prefix, option, key, `${path} (a key)`, seen);
    checkPlainData(prefix, option, inner, `${path}.${String(key)}`, seen);
  }
}
