import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';

/**
 * Options of {@link RedisStreamSink}, all optional. With none, the sink appends every job, log record
 * and metric point to the stream `deferred:<kind>` through the ioredis client the app registers under
 * the token `'REDIS'`.
 */
export interface RedisStreamSinkOptions {
  /** Unique sink name, used by routing. Default `'redis-streams'`. */
  name?: string;
  /**
   * The Redis to write to, one of:
   * - an injection token the app registers its ioredis `Redis` under, resolved at bootstrap;
   * - such a client itself;
   * - a Bull 4 or BullMQ `Queue`, or its injection token (`getQueueToken('orders')` of `@nestjs/bull` /
   *   `@nestjs/bullmq`): the sink writes through the queue's own connection (Bull's `client`; BullMQ's
   *   once the queue is ready, the writes before that waiting for it within their `writeTimeoutMs`) and
   *   holds the queue open through the drain as well;
   * - a URL (`redis://…`, `rediss://…`) or ioredis connection options (`{ host, port, … }`): the only
   *   cases in which the sink opens a connection of its own (closed at shutdown).
   *
   * The sink never closes the app's client; it keeps it open until its entries are written at shutdown.
   * Default `'REDIS'`.
   */
  client?: unknown;
  /** Which kinds of item the sink takes. Default `['job', 'log', 'metric']`. */
  kinds?: readonly SinkKind[];
  /** The stream key entries go to, or a function choosing it per item. Default `deferred:<kind>`. */
  stream?: string | ((item: SinkItem) => string);
  /**
   * Maps an item to the entry's fields (string values). Must be pure: it runs when the item is
   * deferred (to refuse a bad item there) and the result is kept for the write. Default: `id`, `kind`,
   * `name`, `payload` (JSON), and `requestId`, `traceparent` when the item has them.
   */
  fields?: (item: SinkItem) => Record<string, string>;
  /** Trims each stream written to about this many entries (`MAXLEN ~ n`). Default: no trimming. */
  maxLen?: number;
  /** Trims entries older than this many milliseconds (`MINID ~ <now - maxAgeMs>-0`). Default: no trimming. Not with `maxLen`. */
  maxAgeMs?: number;
  /**
   * Does not create a missing stream (`NOMKSTREAM`): an entry for a stream that does not exist fails
   * for good (dead-lettered). Default `false`.
   */
  noMkStream?: boolean;
}

/** The name of a Redis Streams sink unless `name` says otherwise. */
export const REDIS_STREAM_SINK_NAME = 'redis-streams';

/** The option defaults of {@link RedisStreamSink}. */
export const REDIS_STREAM_SINK_DEFAULTS = Object.freeze({
  name: REDIS_STREAM_SINK_NAME,
  client: 'REDIS',
  kinds: Object.freeze(['job', 'log', 'metric'] as const),
  noMkStream: false,
});

/**
 * Dispatcher settings of a Redis Streams sink:
 * - `maxBatchSize` 500: 500 `XADD`s, sent 50 at a time, take a few milliseconds.
 * - `writeTimeoutMs` 5000: Redis answers in milliseconds; a write that long means the link is gone.
 */
export const REDIS_STREAM_PROCESSOR_DEFAULTS: Partial<SinkProcessorOptions> = Object.freeze({
  maxBatchSize: 500,
  writeTimeoutMs: 5_000,
});
