import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { abortable } from '../kit/abortable';
import { itemId } from '../kit/item-id';
import { ItemMemo } from '../kit/item-memo';
import { chunk } from '../kit/chunks';
import { inTurns } from '../kit/in-turns';
import { inOneSocketWrite } from '../kit/one-socket-write';
import { describeValue } from '../kit/option-checks';
import { Partitions } from '../kit/partitions';
import { redisReply } from '../kit/redis-errors';
import { redisNotConnected, redisState } from '../kit/redis-state';
import { WriteProgress } from '../kit/write-progress';
import { findStreamRedis, isBullMqAdapter, type StreamRedis } from './redis-stream-clients';
import { defaultFields, defaultFieldArgs, type Trim, xaddHead } from './redis-stream-entries';
import { isRedirection, isStreamCluster, keyPrefixOf, loadSlotOf, SlotGroups, type SlotOf } from './redis-stream-slots';
import { checkRedisStreamSinkOptions } from './redis-stream-sink.checks';
import { REDIS_STREAM_PROCESSOR_DEFAULTS, type RedisStreamSinkOptions } from './redis-stream-sink.options';

/**
 * Most `XADD`s sent at once (one socket write; with a Cluster, one pipeline per node group). Their
 * commands are built, written and their replies read in tasks of the event loop that no request can
 * interrupt (ioredis's own work, 10–20 µs of CPU an entry), so a batch of 500 sent at once would hold
 * every waiting request for several milliseconds; a larger part is sent in pieces, each started a turn
 * of the event loop after the previous one. Measured (`queue-write-loop.js --sink redis-stream`): a
 * 500-entry write's longest task 1.0 ms of CPU instead of 6.3, at no more CPU an entry beyond the
 * run's noise (about 1 µs).
 */
export const ENTRIES_PER_SEND = 50;

/** Pieces of one part in flight at once: the next one is sent while the previous one's replies are on their way. */
const SENDS_IN_FLIGHT = 2;

/** The entries of one piece, with their indexes in the batch. */
interface Piece {
  entries: readonly Entry[];
  indexes: readonly number[];
}

/**
 * A write's pieces: each part (one per node group of a Cluster, else one) cut into pieces of at
 * most {@link ENTRIES_PER_SEND}, the parts taking turns (first piece of each part, then the
 * second of each, …) so that no node waits behind another's whole share.
 */
function piecesOf(parts: ReadonlyArray<{ values: readonly Entry[]; indexes: readonly number[] }>): Piece[] {
  const perPart = parts.map((part) =>
    part.values.length <= ENTRIES_PER_SEND
      ? [{ entries: part.values, indexes: part.indexes }]
      : chunk(part.values, { maxCount: ENTRIES_PER_SEND }).chunks.map((c) => ({ entries: c.values, indexes: c.positions.map((position) => part.indexes[position]) })),
  );
  const total = perPart.reduce((sum, list) => sum + list.length, 0);
  const pieces: Piece[] = [];
  for (let round = 0; pieces.length < total; round++) {
    for (const list of perPart) if (round < list.length) pieces.push(list[round]);
  }
  return pieces;
}

const refused = (error: unknown): [Error, null] => [error instanceof Error ? error : new Error(errorMessage(error)), null];

/**
 * Whether the client was created with `enableAutoPipelining`: its commands issued one by one would be
 * put in an ioredis pipeline of its own and sent on a later turn (after the sink checked the
 * connection), so the sink sends its own pipeline instead.
 */
function autoPipelined(redis: StreamRedis): boolean {
  try {
    return (redis as { options?: { enableAutoPipelining?: unknown } }).options?.enableAutoPipelining === true;
  } catch {
    return false;
  }
}

/** The answer of an `XADD` the client threw on instead of sending (tried again later). */
class NotSent extends Error {}

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

/** An item ready to append: its stream and its fields as `XADD` arguments (`field value …`). */
interface Entry {
  stream: string;
  fields: string[];
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
  /** Whether `XADD`s go through `call('XADD', …)`: BullMQ's ioredis adapter takes its own shape in `xadd`. */
  private viaCall = false;
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
    this.viaCall = isBullMqAdapter(redis);
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
    const pieces = piecesOf(list);
    const sent =
      pieces.length === 1
        ? this.send(redis, pieces[0].entries, pieces[0].indexes, head, progress)
        : inTurns(pieces.length, Math.max(SENDS_IN_FLIGHT, list.length), (c) => this.sendLater(redis, pieces[c], head, progress, signal), (c, error) =>
            progress.fail(pieces[c].indexes, new SinkWriteError(`${this.label}: sending the entries failed: ${errorMessage(error)}`, { cause: error, retryable: true }), true),
          );
    const ended = await progress.until(sent, signal);
    return ended ? progress.result(true) : progress.result(false, signal.reason);
  }

  /**
   * Sends one piece of a write of several, a turn after the previous one: not when the signal has
   * aborted or the connection has dropped since the write began (its entries fail, retryable: nothing
   * waits in ioredis's offline queue to be appended behind the dispatcher's back).
   */
  private async sendLater(redis: StreamRedis, piece: Piece, head: readonly string[], progress: WriteProgress, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return progress.fail(piece.indexes, signal.reason, true);
    if (redisState(redis) !== 'up') {
      return progress.fail(piece.indexes, redisNotConnected(`${this.label}: Redis is not connected (client status "${redis.status}"); these entries were not sent`), true);
    }
    return this.send(redis, piece.entries, piece.indexes, head, progress);
  }

  /**
   * Sends `entries` (the batch's items at `indexes`) — one `XADD` each, issued with the socket corked so
   * that they leave in one write (with a Cluster or an auto-pipelining client: one pipeline, whose node
   * the entries share) — and records each one's outcome in `progress`: on the corked path as each reply
   * comes, so that a write cut short (its timeout, a connection lost part-way) keeps what Redis did
   * confirm and only the unanswered entries are sent again.
   */
  private async send(redis: StreamRedis, entries: readonly Entry[], indexes: readonly number[], head: readonly string[], progress: WriteProgress): Promise<void> {
    if (!isStreamCluster(redis) && !autoPipelined(redis)) return this.corked(redis, entries, indexes, head, progress);
    let replies: Array<[Error | null, unknown]> | null = null;
    let failure: unknown;
    try {
      // a throw here must fail these entries, not leave them unanswered (counted delivered)
      replies = await this.pipelined(redis, entries, head);
    } catch (error) {
      failure = error;
    }
    if (!replies) {
      progress.fail(indexes, new SinkWriteError(`${this.label}: sending the entries failed: ${errorMessage(failure)}`, { cause: failure, retryable: true }), true);
      return;
    }
    for (let i = 0; i < indexes.length; i++) this.record(progress, indexes[i], entries[i].stream, replies[i]);
    // Some slots moved (a resharding, a fail-over): their entries failed retryable; the next write groups them by the new map.
    if (isStreamCluster(redis) && replies.some((reply) => isRedirection(reply?.[0]))) redis.refreshSlotsCache?.(() => undefined);
  }

  /** Records one `XADD`'s reply (`[error, id]`; none: failed as unanswered) as the entry's outcome. */
  private record(progress: WriteProgress, index: number, stream: string, reply: [Error | null, unknown] | undefined): void {
    const error = reply ? reply[0] : new Error('no reply');
    if (!error && reply![1] !== null) return progress.confirmOne(index);
    if (error instanceof NotSent) {
      progress.failEntry({ index, error: new SinkWriteError(`${this.label}: the XADD to stream "${stream}" could not be sent: ${error.message}`, { cause: error.cause, retryable: true }), retryable: true });
    } else if (error) {
      const { code, retryable } = redisReply(error);
      progress.failEntry({ index, error: new SinkWriteError(`${this.label}: Redis refused XADD to stream "${stream}": ${errorMessage(error)}`, { cause: error, code, retryable }), retryable, ...(code ? { code } : {}) });
    } else {
      progress.failEntry({ index, error: new SinkWriteError(`${this.label}: stream "${stream}" does not exist and noMkStream is set; create it (XGROUP CREATE … MKSTREAM) or leave noMkStream out`, { retryable: false }), retryable: false });
    }
  }

  /**
   * One `XADD` per entry, issued in one task with the client's socket corked (one socket write), each
   * recorded as its reply comes. Not an ioredis pipeline: a pipeline and everything it holds outlive the
   * young generation's collections (see `inOneSocketWrite`), which made the garbage collector's pauses
   * the deferred route's longest tasks. A command the client threw on, and those after it, are
   * recorded as not sent. Resolves once every reply is recorded.
   */
  private corked(redis: StreamRedis, entries: readonly Entry[], indexes: readonly number[], head: readonly string[], progress: WriteProgress): Promise<void> {
    const calls: Array<Promise<void>> = [];
    let issued = 0;
    try {
      inOneSocketWrite(redis, () => {
        for (; issued < entries.length; issued++) {
          const index = indexes[issued];
          const stream = entries[issued].stream;
          calls.push(
            (this.viaCall ? redis.call!('XADD', stream, head, entries[issued].fields) : redis.xadd(stream, head, entries[issued].fields)).then(
              (id) => (id !== null ? progress.confirmOne(index) : this.record(progress, index, stream, [null, id])),
              (error: unknown) => this.record(progress, index, stream, refused(error)),
            ),
          );
        }
      });
    } catch (error) {
      const notSent: [Error, null] = [new NotSent(errorMessage(error), { cause: error }), null];
      for (let i = issued; i < entries.length; i++) this.record(progress, indexes[i], entries[i].stream, notSent);
    }
    // recording cannot throw; should it, the entries not recorded yet fail (retryable) rather than count as delivered
    return Promise.all(calls).then(
      () => undefined,
      (error: unknown) => progress.fail(indexes, new SinkWriteError(`${this.label}: recording the replies failed: ${errorMessage(error)}`, { cause: error, retryable: true }), true),
    );
  }

  /** One pipeline of `XADD`s (a Cluster's, for the entries of one node group; or an auto-pipelining client's). */
  private async pipelined(redis: StreamRedis, entries: readonly Entry[], head: readonly string[]): Promise<Array<[Error | null, unknown]> | null> {
    const pipeline = redis.pipeline();
    // ioredis flattens array arguments (one level): the stream, the head and the fields make one XADD
    for (let i = 0; i < entries.length; i++) pipeline.xadd(entries[i].stream, head, entries[i].fields);
    return pipeline.exec();
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
