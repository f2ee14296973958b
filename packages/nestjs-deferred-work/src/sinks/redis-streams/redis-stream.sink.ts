import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { abortable } from '../kit/abortable';
import { itemId } from '../kit/item-id';
import { ItemMemo } from '../kit/item-memo';
import { describeValue } from '../kit/option-checks';
import { Partitions } from '../kit/partitions';
import { redisNotConnected, redisState } from '../kit/redis-state';
import { WriteProgress } from '../kit/write-progress';
import { findStreamRedis, isBullMqAdapter, type StreamRedis } from './redis-stream-clients';
import { defaultFields, defaultFieldArgs, type StreamEntry as Entry, type Trim, xaddHead } from './redis-stream-entries';
import { StreamSends } from './redis-stream-sends';
import { isStreamCluster, keyPrefixOf, loadSlotOf, SlotGroups, type SlotOf } from './redis-stream-slots';
import { checkRedisStreamSinkOptions } from './redis-stream-sink.checks';
import { REDIS_STREAM_PROCESSOR_DEFAULTS, type RedisStreamSinkOptions } from './redis-stream-sink.options';

export { ENTRIES_PER_SEND } from './redis-stream-sends';

/**
 * Connects a client created with `lazyConnect` (status `wait`) now, instead of letting the first `XADD`
 * do it: that `XADD` would wait in ioredis's offline queue until Redis answers, and be appended then —
 * after the write timed out and its entries were sent again. Returns whether it was lazy. A failed
 * connection is ioredis's to retry (and to report as an `error` event).
 */
function connectIfLazy(redis: StreamRedis): boolean {
  if (redis.status !== 'wait' || typeof redis.connect !== 'function') return false;
  redis.connect().catch(() => undefined);
  return true;
}

/**
 * Appends deferred items to Redis Streams (`XADD`) through the app's own ioredis client, found by
 * injection token at bootstrap: a batch sent 50 `XADD`s at a time, each 50 in one socket write (one
 * per item, to as many streams as the batch's items name; with an ioredis `Cluster`, a pipeline per
 * node the batch's streams hash to), each entry carrying the item's id so that a consumer can drop the copy a retry
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
  /** `NOMKSTREAM`, `MAXLEN ~ n`, `*`: the same for every entry (with `maxAgeMs`, built per batch). */
  private readonly head: readonly string[] | undefined;
  private redis: StreamRedis | undefined;
  /** A BullMQ queue's connection being readied (the client is set once it is). */
  private ready: Promise<void> | undefined;
  /** Sends the `XADD`s (set with the client, whose shape it follows). */
  private sends: StreamSends | undefined;
  private own = false;
  /** A key's hash slot, when the client is an ioredis `Cluster`. */
  private slotOf: SlotOf | undefined;
  private closed = false;
  /** Each item's entry, from its validation to its write (an item copied — spooled, offloaded — is mapped again); on the item, see ItemMemo. */
  private readonly entries = new ItemMemo<Entry>('RedisStreamSink entry');

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
    this.head = this.trim && 'maxAgeMs' in this.trim ? undefined : xaddHead(this.trim, this.noMkStream, 0);
  }

  /**
   * Finds the client and holds the app's open through the drain (and the queue whose connection it is).
   * A BullMQ queue's connection is used once the queue is ready, without waiting for it here: Redis may
   * be down while the app starts.
   */
  async attach(context: SinkAttachContext): Promise<void> {
    const found = await findStreamRedis(context, this.client, this.label);
    this.own = found.own;
    if (found.queue) context.holdOpen(found.queue);
    if (found.redis) await this.use(found.redis, context);
    else if (found.ready) {
      this.ready = found.ready.then((redis) => this.use(redis, context));
      this.ready.catch(() => undefined); // each write waiting for it fails, saying why
    }
  }

  private async use(redis: StreamRedis, context: SinkAttachContext): Promise<void> {
    if (!this.own) context.holdOpen(redis as unknown as object);
    connectIfLazy(redis);
    this.sends = new StreamSends(this.label, isBullMqAdapter(redis));
    if (isStreamCluster(redis)) this.slotOf = await loadSlotOf(this.label, keyPrefixOf(redis));
    this.redis = redis;
  }

  /** A BullMQ queue's connection, once the queue is ready (at most until the write's signal aborts). */
  private async readyRedis(ready: Promise<void>, signal: AbortSignal): Promise<StreamRedis | undefined> {
    try {
      await abortable(ready, signal);
    } catch (error) {
      const why = signal.aborted ? 'it did not connect before the write timed out' : errorMessage(error);
      throw redisNotConnected(`${this.label}: the connection of the BullMQ queue it writes through is not ready (${why}); the batch was not sent`, error);
    }
    return this.redis;
  }

  /** Refuses, when it is deferred, an item whose entry cannot be built (a stream key that is not a string, fields that are not strings). */
  validate(item: SinkItem): void {
    this.entry(item);
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    // a BullMQ queue's connection not ready yet: wait for it (its first send then a turn later)
    const redis = this.redis ?? (this.ready && !this.closed ? await this.readyRedis(this.ready, signal) : undefined);
    if (this.closed || !redis) throw new SinkWriteError(`${this.label} is ${this.closed ? 'shut down' : 'not attached: add it to DeferredWorkModule'}`, { retryable: false });
    if (connectIfLazy(redis)) {
      throw redisNotConnected(`${this.label}: Redis is not connected (client status "wait", connecting now); the batch was not sent`);
    }
    const state = redisState(redis);
    // Sent now, the commands would wait in ioredis' offline queue and be appended whenever Redis comes back, behind the dispatcher's retry.
    if (state !== 'up') throw redisNotConnected(`${this.label}: Redis is not connected (client status "${redis.status}"); the batch was not sent`);
    const progress = new WriteProgress(batch.length);
    // With a Cluster, one part per group of nodes serving the entries' slots (a Cluster pipeline must hold keys one node serves).
    const groups = this.slotOf && isStreamCluster(redis) ? new SlotGroups(redis, this.slotOf) : undefined;
    const parts = new Partitions<string, string, Entry>();
    for (let index = 0; index < batch.length; index++) {
      try {
        const entry = this.entry(batch[index]);
        const group = groups ? groups.of(entry.stream) : '';
        parts.add(group, index, entry, () => group);
      } catch (error) {
        progress.fail([index], error, false);
      }
    }
    const list = parts.list();
    if (list.length === 0) return progress.result(true);
    const head = this.head ?? xaddHead(this.trim, this.noMkStream, Date.now());
    const sent = this.sends!.sendAll(redis, list, head, progress, signal);
    const ended = await progress.until(sent, signal);
    return ended ? progress.result(true) : progress.result(false, signal.reason);
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
    const fields = this.fields === defaultFields ? this.checked(defaultFieldArgs(item)) : this.fieldArgs(item);
    const entry = { stream, fields };
    this.entries.set(item, entry);
    return entry;
  }

  /** The default fields' arguments, each value checked to be a string (an item's name, its request id). */
  private checked(args: string[]): string[] {
    for (let i = 1; i < args.length; i += 2) {
      if (typeof args[i] !== 'string') throw new Error(`${this.label}: fields(item) returned a value that is not a string for "${args[i - 1]}": ${describeValue(args[i])}`);
    }
    return args;
  }

  /** `fields(item)` as `XADD` arguments, checked: an object of string values, at least one. */
  private fieldArgs(item: SinkItem): string[] {
    const fields = this.fields(item);
    if (typeof fields !== 'object' || fields === null) throw new Error(`${this.label}: fields(item) must return an object of string values, got ${describeValue(fields)}`);
    const keys = Object.keys(fields);
    if (keys.length === 0) throw new Error(`${this.label}: fields(item) must return an object of string values, got ${describeValue(fields)}`);
    const args: string[] = new Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) {
      const value = fields[keys[i]];
      if (typeof value !== 'string') throw new Error(`${this.label}: fields(item) returned a value that is not a string for "${keys[i]}": ${describeValue(value)}`);
      args[2 * i] = keys[i];
      args[2 * i + 1] = value;
    }
    return args;
  }
}
