import { createHash } from 'node:crypto';
import type { SinkItem } from '../../core/items/deferred-item.interface';

/**
 * Reads an HTTP `Retry-After` value, in either form (RFC 9110 §10.2.3): delta-seconds (`"120"`) or
 * an HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`, taken relative to `now`). Returns milliseconds
 * (`0` for a date in the past), or `undefined` when the header is absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined; // "-1", "1.5": neither form
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Protocol, host and path of a URL: never its credentials, query or fragment. */
export function displayUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * The item as it goes over the wire: explicit fields only (never a function, nor routing details);
 * its `id` (every accepted item has one, the same on every retry and replay), for the receiver to drop a copy.
 */
export function toWire(item: SinkItem): object {
  switch (item.kind) {
    case 'job':
      return { kind: 'job', id: item.id, queue: item.queue, name: item.name, data: item.data, opts: item.opts, createdAt: item.createdAt, correlation: item.correlation };
    case 'log':
      return { kind: 'log', id: item.id, level: item.level, message: item.message, fields: item.fields, createdAt: item.createdAt, correlation: item.correlation };
    case 'metric':
      return { kind: 'metric', id: item.id, name: item.name, value: item.value, tags: item.tags, createdAt: item.createdAt, correlation: item.correlation };
  }
}

/**
 * The `Idempotency-Key` of one POST: derived from `scope` (the sink and the URL it posts to) and its
 * items' stable ids (a hash, so the same items give the same key on every retry and after a replay),
 * or `undefined` when one of them has none. The scope keeps two sinks that post the same items (an item
 * routed to both) from sending one key to a receiver that keeps one key store for every path.
 */
export function idempotencyKey(batch: readonly SinkItem[], indexes: readonly number[], scope: string): string | undefined {
  const hash = createHash('sha256').update(scope).update('\n');
  for (const index of indexes) {
    const id = batch[index]!.id;
    if (id === undefined) return undefined;
    hash.update(id).update('\n');
  }
  return `dw-${hash.digest('base64url').slice(0, 32)}`;
}

export function causeMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
