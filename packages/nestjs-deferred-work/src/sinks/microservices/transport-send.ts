import type { SinkWriteError } from '../../core/errors/sink-write.error';
import type { ClientProxyLike } from './client-proxy-sink.options';

/** Resolves when the client's `emit` observable completes; rejects on its error. */
export function emitted(client: ClientProxyLike, pattern: string, data: unknown): Promise<void> {
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
