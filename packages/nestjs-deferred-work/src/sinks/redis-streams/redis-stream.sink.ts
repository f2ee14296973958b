import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { itemId } from '../kit/item-id';
import { describeValue } from '../kit/option-checks';
import { redisReply } from '../kit/redis-errors';
import { redisState } from '../kit/redis-state';
import { WriteProgress } from '../kit/write-progress';
import { findStreamRedis, type StreamRedis } from './redis-stream-clients';
import { type Trim, xaddArgs } from './redis-stream-entries';
import { checkRedisStreamSinkOptions } from './redis-stream-sink.checks';
import { REDIS_STREAM_PROCESSOR_DEFAULTS, type RedisStreamSinkOptions } from './redis-stream-sink.options';

/** An item ready to append: its stream and its fields. */
interface Entry {
  stream: string;
  fields: Record<string, string>;
}

/**
 * Appends deferred items to Redis Streams (`XADD`) through the app's own ioredis client, found by
 * injection token at bootstrap: one pipeline per batch (one `XADD` per item, to as many streams as the
 * batch's items name), each entry carrying the item's id so that a consumer can drop the copy a retry
 * after a lost reply or a spool replay appends again. An entry Redis refuses (WRONGTYPE, a missing
 * stream with `noMkStream`) is dead-lettered alone; one that failed for a transient reason (connection
 * lost, LOADING, BUSY, READONLY) is retried alone. Nothing is sent while the client is not connected
 * (no ioredis offline-queue duplicates), and the client is kept open until the entries are written at
 * shutdown. See `docs/sinks/redis-streams.md`.
 */
export class RedisStreamSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[];
  readonly defaults: Partial<SinkProcessorOptions> = REDIS_STREAM_PROCESSOR_DEFAULTS;

  private readonly label: string;
  private readonly client: unknown;
  private readonly stream: (item: SinkItem) => string;
  private readonly fields: (item: SinkItem) => Record<string, string>;
  private readonly trim: Trim;
  private readonly noMkStream: boolean;
  private redis: StreamRedis | undefined;
  private own = false;
  private closed = false;
  /** Each item's entry, from its validation to its write (an item copied — spooled, offloaded — is mapped again). */
  private readonly entries = new WeakMap<SinkItem, Entry>();

  constructor(options?: RedisStreamSinkOptions) {
    const settings = checkRedisStreamSinkOptions(options);
    this.name = settings.name;
    this.label = settings.label;
    this.kinds = settings.kinds;
    this.client = settings.client;
    this.stream = settings.stream;
    this.fields = settings.fields;
    this.trim = settings.trim;
    this.noMkStream = settings.noMkStream;
  }

  /** Finds the client and holds the app's open through the drain. */
  async attach(context: SinkAttachContext): Promise<void> {
    const found = await findStreamRedis(context, this.client, this.label);
    this.redis = found.redis;
    this.own = found.own;
    if (!this.own) context.holdOpen(this.redis as unknown as object);
  }

  /** Refuses, when it is deferred, an item whose entry cannot be built (a stream key that is not a string, fields that are not strings). */
  validate(item: SinkItem): void {
    this.entry(item);
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    const redis = this.redis;
    if (this.closed || !redis) throw new SinkWriteError(`${this.label} is ${this.closed ? 'shut down' : 'not attached: add it to DeferredWorkModule'}`, { retryable: false });
    const state = redisState(redis);
    // Sent now, the commands would wait in ioredis' offline queue and be appended whenever Redis comes back, behind the dispatcher's retry.
    if (state !== 'up') throw new SinkWriteError(`${this.label}: Redis is not connected (client status "${redis.status}"); the batch was not sent`, { retryable: true });
    const progress = new WriteProgress(batch.length);
    const sent: number[] = [];
    const pipeline = redis.pipeline();
    const now = Date.now();
    for (let index = 0; index < batch.length; index++) {
      let entry: Entry;
      try {
        entry = this.entry(batch[index]);
      } catch (error) {
        progress.fail([index], error, false);
        continue;
      }
      pipeline.xadd(...xaddArgs(entry.stream, entry.fields, this.trim, this.noMkStream, now));
      sent.push(index);
    }
    if (sent.length === 0) return progress.result(true);
    const exec = pipeline.exec();
    let replies: Array<[Error | null, unknown]> | null = null;
    let failure: unknown;
    const ended = await progress.until(
      exec.then(
        (r) => void (replies = r),
        (error: unknown) => void (failure = error),
      ),
      signal,
    );
    if (!ended) return progress.result(false, signal.reason);
    if (failure !== undefined || !replies) {
      progress.fail(sent, new SinkWriteError(`${this.label}: the pipeline failed: ${errorMessage(failure)}`, { cause: failure, retryable: true }), true);
      return progress.result(true);
    }
    const got: Array<[Error | null, unknown]> = replies;
    sent.forEach((index, i) => {
      const [error, id] = got[i] ?? [new Error('no reply'), undefined];
      const stream = this.entries.get(batch[index])?.stream;
      if (error) {
        const { code, retryable } = redisReply(error);
        progress.failEntry({ index, error: new SinkWriteError(`${this.label}: Redis refused XADD to stream "${stream}": ${errorMessage(error)}`, { cause: error, code, retryable }), retryable, ...(code ? { code } : {}) });
      } else if (id === null) {
        progress.failEntry({ index, error: new SinkWriteError(`${this.label}: stream "${stream}" does not exist and noMkStream is set; create it (XGROUP CREATE … MKSTREAM) or leave noMkStream out`, { retryable: false }), retryable: false });
      } else progress.confirm([index]);
    });
    return progress.result(true);
  }

  /** Closes the sink's own connection (from a URL or connection options); the app's client is the app's to close. */
  async shutdown(): Promise<void> {
    this.closed = true;
    if (this.own) await this.redis?.quit().catch(() => undefined);
  }

  /** The item's entry (built once: when it is validated, kept for its write). */
  private entry(item: SinkItem): Entry {
    const known = this.entries.get(item);
    if (known) return known;
    itemId(item); // an item written outside the dispatcher (a test) gets its id here, for fields(item)
    const stream = this.stream(item);
    if (typeof stream !== 'string' || stream === '') throw new Error(`${this.label}: stream(item) must return a non-empty string, got ${describeValue(stream)}`);
    const fields = this.fields(item);
    if (typeof fields !== 'object' || fields === null || Object.keys(fields).length === 0) throw new Error(`${this.label}: fields(item) must return an object of string values, got ${describeValue(fields)}`);
    for (const [key, value] of Object.entries(fields)) {
      if (typeof value !== 'string') throw new Error(`${this.label}: fields(item) returned a value that is not a string for "${key}": ${describeValue(value)}`);
    }
    const entry = { stream, fields };
    this.entries.set(item, entry);
    return entry;
  }
}
