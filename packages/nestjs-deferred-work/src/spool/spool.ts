import { closeSync, openSync } from 'node:fs';
import { GroupCommit } from './group-commit';
import { QueuedWrites } from './queued-writes';
import { SegmentSet } from './segment-set';
import { prepareSpoolDir, spoolDirError, type SpoolDirSource } from './spool-dir';
import { SpoolLock } from './spool-lock';
import { readPendingRecords, replaySegments } from './spool-reads';
import { recoverSegments } from './spool-recovery';
import type { SpoolRecord, SpoolStats } from './spool-stats';
import { SpoolWriter } from './spool-writer';
import { resolveSpoolOptions, type ResolvedSpoolOptions, type SpoolOptions } from './spool.options';

/**
 * A crash-durable, append-only record spool in one directory (one process per directory).
 *
 * - `append(record)` writes a checksummed frame (see `frame.ts`) to the current segment file and
 *   returns its sequence number; group commit makes it durable within `syncIntervalMs` (`synced()`).
 * - `ack(seq)` confirms records; a segment whose records are all acked is deleted.
 * - `replay()` yields the records a previous process left un-acked, in sequence order; torn records
 *   (a crash mid-write, a flipped bit) are skipped and counted, never yielded.
 * - `maxBytes` reached or the disk full: `append` throws `SpoolFullError`; nothing spooled is harmed.
 *
 * Guarantee: after `synced()` resolved, the records appended before it survive kill -9 and power
 * loss; a kill -9 loses at most the records appended in the event-loop turn it strikes (written at its
 * end), a power loss at most those of the last `syncIntervalMs`.
 */
export class Spool {
  /** Resolved options, every default applied. */
  readonly options: ResolvedSpoolOptions;

  private readonly segments: SegmentSet;
  private readonly replayBefore: number;
  private readonly commit: GroupCommit;
  private closing: Promise<void> | undefined;
  /** Torn records found at open (cut off, never yielded). */
  private readonly torn: number;
  private readonly writes: QueuedWrites;
  /** Appends, acks and batch marks. */
  private readonly writer: SpoolWriter;

  private constructor(
    /** The spool's directory. */
    readonly dir: string,
    options: ResolvedSpoolOptions,
    private readonly lock: SpoolLock,
    private readonly dirFd: number,
  ) {
    this.options = options;
    this.commit = new GroupCommit(options.syncIntervalMs, () => this.flushDirty());
    this.writes = new QueuedWrites(options.syncIntervalMs, () => this.closing !== undefined);
    const { segments, nextSeq, torn } = recoverSegments(dir);
    this.torn = torn;
    this.replayBefore = nextSeq;
    // A new segment per process: nothing is ever written after a previous process's (torn) tail.
    this.segments = new SegmentSet(dir, segments, nextSeq, this.writes);
    this.writer = new SpoolWriter(dir, options, this.segments, this.commit, this.writes, nextSeq);
    this.commit.wrote(); // the new segment's directory entry
  }

  /**
   * Opens (creating it if needed) the spool in `dir`: takes its lock (`SpoolLockedError` when another
   * live process holds it; a dead holder's lock is taken over), reads every segment back (torn records
   * skipped, counted and cut off) and starts a new segment. Synchronous: it reads the segments once.
   * Options: `maxBytes` 256 MiB, `syncIntervalMs` 200 ms, `segmentBytes` 8 MiB (see `SpoolOptions`).
   * The directory is created with mode 0700 and its files 0600; one writable by every user, a path
   * that is not a directory, or a symbolic link among its files fails with `DeferredWorkConfigError`
   * naming `source.option` (default `spool.dir`) and the path given there (`source.given`).
   */
  static open(dir: string, options: SpoolOptions = {}, source?: Partial<SpoolDirSource>): Spool {
    const named: SpoolDirSource = { option: source?.option ?? 'spool.dir', given: source?.given ?? dir };
    const resolved = resolveSpoolOptions(options);
    prepareSpoolDir(dir, named);
    const lock = SpoolLock.acquire(dir, named);
    let dirFd: number | undefined;
    try {
      dirFd = openSync(dir, 'r');
      return new Spool(dir, resolved, lock, dirFd);
    } catch (error) {
      if (dirFd !== undefined) closeSync(dirFd);
      lock.release();
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw spoolDirError(dir, named, error);
      throw error;
    }
  }

  /**
   * Appends one record and returns its sequence number. The records of one event-loop turn are written
   * to the file together at its end (one `write`; at once past 1 MiB), so they survive the death of the
   * process from then on, and are durable once `synced()` resolves (within `syncIntervalMs`). Throws
   * `SpoolFullError` when `maxBytes` would be passed or the disk refused the last write (no part of the
   * record is kept), and `RangeError` when the record is larger than a segment. Records accepted before
   * the disk refused a write stay in memory and are written when it has room again.
   */
  append(record: Buffer | string): number {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    return this.writer.append(record);
  }

  /**
   * Confirms records (their sink delivered them): each is written to its segment's `.acks` file,
   * made durable by the same group commit; a segment whose records are all acked is deleted with its
   * ack file. Unknown or already acked seqs are ignored. Returns how many records were newly acked.
   */
  ack(seqs: number | readonly number[]): number {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    return this.writer.ack(seqs);
  }

  /**
   * Records that a write of `count` records begins with `seq` (the pending records from it, in seq
   * order): written to the ack file of `seq`'s segment, made durable by the group commit like an ack.
   * After a restart `replayBatches()` gives it back, so the same records can be written together
   * again. Ignored when `seq` is not pending; a disk refusing it is counted in `ackWriteFailures`.
   */
  markBatch(seq: number, count: number): void {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    this.writer.markBatch(seq, count);
  }

  /**
   * The batch marks a previous process left (see `markBatch`): first seq to count, for the records
   * `replay()` yields. The last mark written for a seq wins.
   */
  replayBatches(): Map<number, number> {
    const marks = new Map<number, number>();
    for (const segment of this.segments.list) {
      if (segment.firstSeq >= this.replayBefore) break;
      for (const [seq, count] of segment.marks) if (segment.isPending(seq)) marks.set(seq, count);
    }
    return marks;
  }

  /**
   * The records a previous process left un-acked (found when this spool was opened), in sequence
   * order, skipping those acked since. Torn records are never yielded (they were counted at open).
   * Records appended by this process are not replayed: their owner still holds them in memory.
   */
  *replay(): Generator<SpoolRecord> {
    yield* replaySegments(this.segments.list, this.replayBefore);
  }

  /**
   * Up to `limit` pending (not acked) records with a seq above `afterSeq`, in seq order, from every
   * segment — a previous process's and this one's. Reads each segment's span once (`readSync`; records
   * not written yet come from memory). What a reader pages back in from disk: records appended but not
   * held in memory (a backlog), or replayed. `missing` lists the pending seqs of that range whose frame
   * no longer checks out (the disk changed under us): every pending seq tried is in one of the two lists.
   */
  readPending(afterSeq: number, limit: number): { records: SpoolRecord[]; missing: number[] } {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    return readPendingRecords(this.segments.list, afterSeq, limit);
  }

  /** The highest seq of a record a previous process left (those `replay()` yields are at or below it); 0 when none. */
  get lastReplaySeq(): number {
    return this.replayBefore - 1;
  }

  /**
   * Resolves when everything appended and acked before the call is fsynced (by the group commit, at
   * most `syncIntervalMs` later); rejects when that fsync failed. While awaited, the timer keeps the
   * process alive.
   */
  synced(): Promise<void> {
    return this.commit.synced();
  }

  /** Counters and gauges of the spool (see `SpoolStats`). */
  stats(): SpoolStats {
    let pendingRecords = 0;
    let oldest: number | undefined;
    for (const segment of this.segments.list) {
      pendingRecords += segment.pending;
      oldest ??= segment.oldestPendingTime();
    }
    return {
      pendingRecords,
      bytesOnDisk: this.segments.bytes,
      oldestPendingAgeMs: oldest === undefined ? 0 : Math.max(0, Date.now() - oldest),
      segments: this.segments.list.length,
      appended: this.writer.counts.appended,
      bytesWritten: this.writer.counts.bytesWritten,
      acked: this.writer.counts.acked,
      refused: this.writer.counts.refused,
      fsyncs: this.commit.fsyncs,
      syncErrors: this.commit.errors,
      tornRecords: this.torn,
      ackWriteFailures: this.writer.counts.ackWriteFailures,
      writeErrors: this.writes.errors,
      unwrittenBytes: this.writes.bytes,
      unwrittenRecords: this.writes.records,
    };
  }

  /**
   * Writes and fsyncs what is left, closes the files and releases the lock. Idempotent. Records the
   * disk still refuses then are lost: `stats().unwrittenRecords` counts them afterwards.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        this.writes.stop();
        this.writes.writeAll(); // a failure is counted; the group commit below tries once more
        await this.commit.flushNow();
      } finally {
        for (const segment of this.segments.list) segment.close();
        closeSync(this.dirFd);
        this.lock.release();
      }
    })();
    return this.closing;
  }

  /**
   * Writes the records appended so far now, rather than at the end of the turn (what a caller does when
   * it is about to confirm them elsewhere). Returns whether everything was written; a failure is kept
   * and handled as at the end of a turn.
   */
  writeNow(): boolean {
    return this.closing ? false : this.writes.writeAll();
  }

  private async flushDirty(): Promise<number> {
    if (!this.writes.writeAll()) throw this.writes.error;
    return this.segments.sync(this.dirFd);
  }
}
