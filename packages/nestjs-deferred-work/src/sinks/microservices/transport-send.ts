import type { SinkWriteError } from '../../core/errors/sink-write.error';
import type { ClientProxyLike } from './client-proxy-sink.options';
import type { NestRecords } from './transport.interface';

/** The protected methods of `ClientProxy` (Nest 10–12) that its own `emit` calls; `createPacket` is Nest 12's. */
interface Dispatching {
  emit: unknown;
  dispatchEvent?: (packet: { pattern: unknown; data: unknown }) => unknown;
  createPacket?: (pattern: unknown, data: unknown) => { pattern: unknown; data: unknown };
}

/** What an observer-taking source (an rxjs `Observable`) offers. */
interface Subscribable {
  subscribe(observer: { error?: (error: unknown) => void; complete?: () => void }): unknown;
}

/**
 * Whether `emit` is `ClientProxy`'s own, unwrapped: the prototype's function itself, not one a
 * shimmer-style instrumentation put in its place (the `shimmer` package, which OpenTelemetry's
 * instrumentations use, marks a wrapper `__wrapped` and keeps the original under `__original`).
 */
function isStockEmit(emit: unknown, stock: unknown): boolean {
  if (stock === undefined || emit !== stock) return false;
  const fn = emit as { __wrapped?: unknown; __original?: unknown };
  return fn.__wrapped === undefined && fn.__original === undefined;
}

/** Resolves when what `dispatchEvent` answered settles: a promise (Nest's transports), an observable (a subclass may return one; `emit` accepts both), or a value. */
function settled(result: unknown): Promise<void> {
  if (typeof (result as PromiseLike<unknown> | null)?.then === 'function') return Promise.resolve(result as PromiseLike<unknown>).then(() => undefined);
  if (typeof (result as Subscribable | null)?.subscribe === 'function') {
    return new Promise<void>((resolve, reject) => {
      (result as Subscribable).subscribe({ error: reject, complete: () => resolve() });
    });
  }
  return Promise.resolve();
}

/**
 * Resolves when the event is sent (on RabbitMQ: confirmed); rejects on the client's error.
 *
 * A client whose `emit` is `ClientProxy`'s own is handed the event the way that `emit` hands it on —
 * `dispatchEvent(createPacket(pattern, data))` (Nest 10 and 11: `{ pattern, data }`) — without the rxjs
 * pipeline `emit` wraps around it (`defer`, `connect()`, `mergeMap`, a `connectable` subject). The sink
 * sends only once the client is connected, which is all `emit`'s `connect()` would add. A client whose
 * `emit` is its own (defined by a subclass or on the instance) or wrapped by a shimmer-style
 * instrumentation (`__wrapped`, `__original`) goes through `emit`.
 */
export function emitted(client: ClientProxyLike, pattern: string, data: unknown, records: NestRecords): Promise<void> {
  const own = client as unknown as Dispatching;
  if (isStockEmit(own.emit, records.ClientProxy?.prototype.emit) && typeof own.dispatchEvent === 'function' && data !== undefined && data !== null) {
    try {
      const packet = typeof own.createPacket === 'function' ? own.createPacket(pattern, data) : { pattern, data };
      return settled(own.dispatchEvent(packet));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return new Promise<void>((resolve, reject) => {
    try {
      client.emit(pattern, data).subscribe({ error: reject, complete: () => resolve() });
    } catch (error) {
      reject(error);
    }
  });
}

/** `data` with the id under `key`, when `data` is a plain object and a key is set. */
export function withPayloadId(data: unknown, key: string | false | undefined, id: string): unknown {
  if (!key || data === null || typeof data !== 'object' || Array.isArray(data) || Buffer.isBuffer(data)) return data;
  return { ...(data as object), [key]: id };
}

/** `promise`, with a rejection that `classify` recognises replaced by what it returns. */
export function refusing(promise: Promise<void>, classify: (error: unknown) => SinkWriteError | undefined): Promise<void> {
  return promise.catch((error: unknown) => {
    throw classify(error) ?? error;
  });
}
