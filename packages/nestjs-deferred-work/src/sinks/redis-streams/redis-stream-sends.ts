import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { chunk } from '../kit/chunks';
import { inTurns } from '../kit/in-turns';
import { inOneSocketWrite } from '../kit/one-socket-write';
import { redisReply } from '../kit/redis-errors';
import { redisNotConnected, redisState } from '../kit/redis-state';
import type { WriteProgress } from '../kit/write-progress';
import type { StreamRedis } from './redis-stream-clients';
import type { StreamEntry as Entry } from './redis-stream-entries';
import { isRedirection, isStreamCluster } from './redis-stream-slots';

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
 * How `RedisStreamSink` sends a write's entries: in pieces of at most {@link ENTRIES_PER_SEND}, each
 * a turn of the event loop after the previous one, one `XADD` per entry in one socket write (with a
 * Cluster or an auto-pipelining client, one pipeline), and each reply recorded as its entry's outcome.
 */
export class StreamSends {
  constructor(
    private readonly label: string,
    /** Whether `XADD`s go through `call('XADD', …)`: BullMQ's ioredis adapter takes its own shape in `xadd`. */
    private readonly viaCall: boolean,
  ) {}

  /**
   * Sends the entries of `parts` (one per node group of a Cluster, else one), the parts taking turns
   * piece by piece, and records each entry's outcome in `progress`. Resolves once every piece has settled.
   */
  sendAll(redis: StreamRedis, parts: ReadonlyArray<{ values: readonly Entry[]; indexes: readonly number[] }>, head: readonly string[], progress: WriteProgress, signal: AbortSignal): Promise<void> {
    const pieces = piecesOf(parts);
    return pieces.length === 1
      ? this.send(redis, pieces[0].entries, pieces[0].indexes, head, progress)
      : inTurns(pieces.length, Math.max(SENDS_IN_FLIGHT, parts.length), (c) => this.sendLater(redis, pieces[c], head, progress, signal), (c, error) =>
          progress.fail(pieces[c].indexes, new SinkWriteError(`${this.label}: sending the entries failed: ${errorMessage(error)}`, { cause: error, retryable: true }), true),
        );
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
}
