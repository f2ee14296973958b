import type { SinkWriteError } from '../../core/errors/sink-write.error';
import type { ClientProxyLike } from './client-proxy-sink.options';
import type { NestRecords } from './transport.interface';

/** The protected methods of `ClientProxy` (Nest 10–12) that its own `emit` calls; `createPacket` is Nest 12's. */
interface Dispatching {
  emit: unknown;
  dispatchEvent?: (packet: { pattern: unknown; data: unknown }) => Promise<unknown>;
  createPacket?: (pattern: unknown, data: unknown) => { pattern: unknown; data: unknown };
}

/**
 * Resolves when the event is sent (on RabbitMQ: confirmed); rejects on the client's error.
 *
 * A client whose `emit` is `ClientProxy`'s own is handed the event the way that `emit` hands it on —
 * `dispatchEvent(createPacket(pattern, data))` (Nest 10 and 11: `{ pattern, data }`) — without the rxjs
 * pipeline `emit` wraps around it (`defer`, `connect()`, `mergeMap`, a `connectable` subject): that
 * pipeline is about a fifth of a RabbitMQ publish's CPU. The sink sends only once the client is
 * connected, which is all `emit`'s `connect()` would add. A client whose `emit` is its own (a subclass,
 * an instrumentation's patch) goes through `emit`.
 */
export function emitted(client: ClientProxyLike, pattern: string, data: unknown, records?: NestRecords): Promise<void> {
  const own = client as unknown as Dispatching;
  const stock = records?.ClientProxy?.prototype.emit;
  if (stock !== undefined && own.emit === stock && typeof own.dispatchEvent === 'function' && data !== undefined && data !== null) {
    try {
      const packet = typeof own.createPacket === 'function' ? own.createPacket(pattern, data) : { pattern, data };
      return own.dispatchEvent(packet).then(() => undefined);
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
