import { newItemId } from '../../core/items/item-id';
import { errorMessage } from '../../core/error-message';
import type { SinkSpoolStats } from '../../core/stats.interface';
import { Spool, SpoolFullError, type SpoolDirSource, type SpoolOptions } from '../../spool';
import type { Entry } from './entry';
import { type PagedRecord, type ParkedRecord, parseRecords, takeBacklog } from './spool-page-in';

export type { PagedRecord } from './spool-page-in';

/** Where and how one sink's items are spooled (the `spool` module option, resolved per sink). */
export interface SinkSpoolSettings extends SpoolOptions {
  /** The sink's own directory (the module option's `dir` plus the sink's name). */
  dir: string;
  /**
   * An entry that used up `maxAttempts` on a retryable failure goes to the back of the spool (appended
   * again, its old record acked) and is tried again once the items after it had their turn, instead of
   * being dead-lettered: it never holds the sink's other items for good. Default `false`.
   */
  requeue?: boolean;
  /** The option that set `dir` and the directory given there, for messages. Default `spool.dir` and `dir`. */
  source?: SpoolDirSource;
}

/** What the spool reports to its processor's owner (the dispatcher's rate-limited warnings). */
export interface SinkSpoolHooks {
  warn(key: string, message: string): void;
  log(message: string): void;
}

/**
 * @internal
 * One sink's disk spool, as its processor uses it: every accepted item is appended (as JSON, with a
 * stable `id`) before it is queued, and acked once it is delivered or dead-lettered. Items that do
 * not fit in the processor's memory queue stay on disk only (the backlog) and are paged back in, in
 * order, as the queue empties; so are the records a previous process left (replayed at start, before
 * any new item, since new items join the backlog behind them).
 */
export class SinkSpool {
  /** Records on disk only, not held in memory: replayed ones and those that did not fit in the queue. */
  backlog: number;
  /** Records a previous process left, found at open. */
  readonly replayed: number;
  private readonly spool: Spool;
  /** Every record at or below it is held in memory or settled; the backlog is above it. */
  private cursor = 0;
  private counts = { refused: 0, failed: 0, unreadable: 0, kept: 0, requeued: 0 };
  /**
   * Entries sent to the back by `requeue`, waiting on disk in that order: their record stays where it
   * is (nothing is written again), and each is read back after every backlog record below `before`
   * (the records appended before it was sent back).
   */
  private readonly parked: ParkedRecord[] = [];
  /** Records sent to the back by `requeue` and not settled yet (parked, or read back and in memory). */
  private readonly requeuedSeqs = new Set<number>();
  /** The seq of the last record appended (or left by a previous process). */
  private lastSeq: number;
  /** See `SinkSpoolSettings.requeue`. */
  readonly requeues: boolean;
  /** The writes a previous process began (first seq to size), for replayed records to form the same batches. */
  private readonly replayBatches: Map<number, number>;
  /** The batch marks in the spool for pending records (first seq to size): one is written once. */
  private readonly marks: Map<number, number>;
  /** Refusals in the current spool-full episode (0 when the spool has room). */
  private refusing = 0;

  constructor(
    readonly sinkName: string,
    settings: SinkSpoolSettings,
    private readonly hooks: SinkSpoolHooks,
  ) {
    const { dir, requeue, source, ...options } = settings;
    this.requeues = requeue === true;
    this.spool = Spool.open(dir, options, source);
    this.replayed = this.backlog = this.spool.stats().pendingRecords;
    this.lastSeq = this.spool.lastReplaySeq;
    this.replayBatches = this.spool.replayBatches();
    this.marks = new Map(this.replayBatches);
    const torn = this.spool.stats().tornRecords;
    if (this.replayed > 0 || torn > 0) {
      hooks.log(
        `Spool of sink "${sinkName}" (${dir}): ${this.replayed} item(s) left by a previous process will be delivered before new ones` +
          (torn > 0 ? `; ${torn} torn record(s) (cut short by a crash or failing their checksum) were skipped` : '') +
          '.',
      );
    }
  }

  /** The seq of the last record a previous process left (0 when none). */
  get lastReplaySeq(): number {
    return this.spool.lastReplaySeq;
  }

  /** No backlog record has a seq below it. */
  get backlogFrom(): number {
    return this.cursor + 1;
  }

  /** The spool's directory. */
  get dir(): string {
    return this.spool.dir;
  }

  /**
   * Appends an accepted entry's item (giving it a stable `id` first) and sets the entry's `spoolSeq`
   * and `seq`. Returns `false` when it could not be spooled (spool full, disk refusing): the caller
   * drops it, counted; the first refusal of an episode is logged.
   */
  append(entry: Entry): boolean {
    const item = entry.item as { id?: string };
    item.id ??= newItemId(); // set at acceptance; an entry built outside the dispatcher gets one here
    let seq: number;
    try {
      seq = this.spool.append(JSON.stringify(entry.item));
    } catch (error) {
      return this.refuse(error);
    }
    if (this.refusing > 0) {
      this.hooks.log(`Spool of sink "${this.sinkName}" has room again; ${this.refusing} item(s) were refused while it was full.`);
      this.refusing = 0;
    }
    entry.spoolSeq = seq;
    entry.seq = seq;
    this.lastSeq = seq;
    return true;
  }

  /** Counts and reports a new item the spool refused; `false`. */
  private refuse(error: unknown): false {
    if (error instanceof SpoolFullError) {
      this.counts.refused++;
      if (this.refusing++ === 0) this.hooks.warn(`spool-full:${this.sinkName}`, `Sink "${this.sinkName}": ${error.message} Items are dropped (counted in stats().sinks["${this.sinkName}"].spool.refused) until it has room.`);
    } else {
      this.counts.failed++;
      this.hooks.warn(`spool-failed:${this.sinkName}`, `Sink "${this.sinkName}": an item could not be spooled and was dropped: ${errorMessage(error)}`);
    }
    return false;
  }

  /** Writes what was appended in this turn now (see `Spool.writeNow`). */
  writeNow(): void {
    this.spool.writeNow();
  }

  /** The appended entry is held in memory (there is no backlog to wait behind). */
  held(entry: Entry): void {
    this.cursor = entry.spoolSeq!;
  }

  /**
   * Up to `limit` backlog records, in order, read back from disk and parsed into items: the records
   * never held in memory, in seq order, and the entries `requeue` sent back, each after the records
   * appended before it was. `unreadable` counts backlog records that could not be read: their frame
   * no longer checks out, or not an item (never expected: the checksums passed when they were
   * written). Those are acked (they would fail again) and the caller counts them dead-lettered; the
   * records after them are read as usual. Throws what the disk throws (a read error): the backlog is
   * left as it was.
   */
  pageIn(limit: number): { records: PagedRecord[]; unreadable: number } {
    const wanted = Math.min(limit, this.backlog);
    if (wanted <= 0) return { records: [], unreadable: 0 };
    const { taken, parkedTaken, lastFromDisk, short } = takeBacklog(this.spool, this.cursor, this.parked, this.backlog - this.parked.length, wanted);
    this.parked.splice(0, parkedTaken);
    if (lastFromDisk !== undefined) this.cursor = Math.max(this.cursor, lastFromDisk);
    // Fewer pending records on disk than counted (`short`, never expected): the count is corrected here.
    this.backlog -= taken.length + short;
    const { records, bad } = parseRecords(taken, this.replayBatches);
    const unreadable = bad.length + short;
    if (bad.length > 0) {
      this.spool.ack(bad);
      for (const seq of bad) this.requeuedSeqs.delete(seq);
    }
    if (unreadable > 0) {
      this.counts.unreadable += unreadable;
      this.hooks.warn(`spool-unreadable:${this.sinkName}`, `Spool of sink "${this.sinkName}": ${unreadable} record(s) could not be read back from ${this.dir} as items; they are counted as dead-lettered.`);
    }
    return { records, unreadable };
  }

  /**
   * Sends entries that used up their attempts to the back of the spool, without writing anything: each
   * record stays where it is (pending, so a restart replays it in its place), the entry leaves memory,
   * and it is read back after the records appended before this call. Returns the entries that have no
   * record (never expected with a spool): the caller keeps retrying those in memory.
   */
  requeue(entries: readonly Entry[]): Entry[] {
    const stuck: Entry[] = [];
    for (const entry of entries) {
      const seq = entry.spoolSeq;
      if (!seq) {
        stuck.push(entry);
        continue;
      }
      this.parked.push({ seq, before: this.lastSeq + 1 });
      this.requeuedSeqs.add(seq);
      this.backlog++;
      this.counts.requeued++;
    }
    return stuck;
  }

  /**
   * Marks in the spool that a write of `entries` begins (see `Spool.markBatch`), unless it was marked
   * so already: after a crash, the next process writes the same items together again. Only for
   * entries in seq order (the pending records from the first); a mark the disk refuses is skipped.
   */
  markBatch(entries: readonly Entry[]): void {
    const first = entries[0];
    if (first?.spoolSeq === undefined) return;
    first.marked = entries.length;
    // The same batch formed again (read back after a round at the back of the spool): marked already.
    if (this.marks.get(first.spoolSeq) === entries.length) return;
    for (let i = 1; i < entries.length; i++) if (!(entries[i]!.spoolSeq! > entries[i - 1]!.spoolSeq!)) return;
    this.marks.set(first.spoolSeq, entries.length);
    try {
      this.spool.markBatch(first.spoolSeq, entries.length);
    } catch {
      // A mark only helps a receiver deduplicate after a crash; the write goes on without it.
    }
  }

  /** Records sent to the back by `requeue` and not settled yet. */
  get requeuedPending(): number {
    return this.requeuedSeqs.size;
  }

  /** Confirms settled entries (delivered, or dead-lettered for cause): their records leave the spool. */
  ack(entries: readonly Entry[]): void {
    const seqs: number[] = [];
    for (const entry of entries) if (entry.spoolSeq) seqs.push(entry.spoolSeq);
    if (this.requeuedSeqs.size > 0) for (const seq of seqs) this.requeuedSeqs.delete(seq);
    if (this.marks.size > 0) for (const seq of seqs) this.marks.delete(seq);
    if (seqs.length === 0) return;
    try {
      this.spool.ack(seqs);
    } catch (error) {
      this.hooks.warn(`spool-ack:${this.sinkName}`, `Spool of sink "${this.sinkName}": acks could not be written (${errorMessage(error)}); those items will be delivered again after a restart.`);
    }
  }

  /** Counts entries left in the spool at shutdown's deadline (not acked: the next start delivers them). */
  keep(count: number): void {
    this.counts.kept += count;
  }

  /** Items left in the spool for the next start: kept at the deadline, and the backlog. */
  get leftForNextStart(): number {
    return this.counts.kept + this.backlog;
  }

  /**
   * Writes and fsyncs what is left and releases the directory's lock. Resolves with the number of items
   * lost because the disk refused to write them to the end (0 unless it is full or failing).
   */
  async close(): Promise<number> {
    await this.spool.close();
    return this.spool.stats().unwrittenRecords;
  }

  stats(): SinkSpoolStats {
    const s = this.spool.stats();
    return {
      dir: this.dir,
      maxBytes: this.spool.options.maxBytes,
      pending: s.pendingRecords,
      onDiskOnly: this.backlog,
      bytes: s.bytesOnDisk,
      oldestAgeMs: s.oldestPendingAgeMs,
      replayed: this.replayed,
      refused: this.counts.refused,
      failed: this.counts.failed,
      unreadable: this.counts.unreadable,
      keptAtShutdown: this.counts.kept,
      requeued: this.counts.requeued,
      tornRecords: s.tornRecords,
      fsyncs: s.fsyncs,
      syncErrors: s.syncErrors,
      appended: s.appended,
      acked: s.acked,
      bytesWritten: s.bytesWritten,
    };
  }
}
