import { closeSync, fsync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { encodeFrame, FRAME_HEADER_BYTES, framePayload, scanFrames } from './frame';
import { GroupCommit } from './group-commit';
import { parseSegmentName, SegmentFile } from './segment-file';
import { SpoolFullError } from './spool-full.error';
import { SpoolLock } from './spool-lock';
import { resolveSpoolOptions, type ResolvedSpoolOptions, type SpoolOptions } from './spool.options';

const fsyncAsync = promisify(fsync);

/** The OS saying there is no room: the disk, a quota, a file size limit. */
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

function isDiskFull(error: unknown): error is NodeJS.ErrnoException {
  return DISK_FULL_CODES.has((error as NodeJS.ErrnoException)?.code ?? '');
}

/** A record handed back by `Spool.replay()`. */
export interface SpoolRecord {
  /** Its sequence number: unique in the spool's directory, across restarts; what `ack` takes. */
  readonly seq: number;
  /** Epoch milliseconds when it was appended. */
  readonly timestamp: number;
  /** The bytes given to `append` (a string was stored as UTF-8). */
  readonly payload: Buffer;
}

/** What `Spool.stats()` reports. */
export interface SpoolStats {
  /** Records appended and not acked (recovered ones included). */
  pendingRecords: number;
  /** Bytes of the segment and ack files, what `maxBytes` bounds. */
  bytesOnDisk: number;
  /** Age of the oldest pending record, in milliseconds (0 when none is pending). */
  oldestPendingAgeMs: number;
  /** Segment files on disk. */
  segments: number;
  /** Records appended by this process. */
  appended: number;
  /** Records acked by this process. */
  acked: number;
  /** Appends refused with `SpoolFullError` (`maxBytes` or disk full). */
  refused: number;
  /** Fsync calls made (segment, ack and directory files; one per file per group commit). */
  fsyncs: number;
  /** Group commits whose fsync failed. */
  syncErrors: number;
  /** Torn records found when the spool was opened (cut short or failing their checksum), skipped. */
  tornRecords: number;
  /** Ack writes the disk refused: those records are replayed again after a restart (at least once). */
  ackWriteFailures: number;
  /** Writes of appended records the disk refused (they stay in memory and are written when it has room). */
  writeErrors: number;
  /** Bytes of records appended and not written to their file yet (queued for the end of the turn, or refused by the disk). */
  unwrittenBytes: number;
  /** Of those, the records not acked: after `close()`, the ones lost (the disk refused them to the end). */
  unwrittenRecords: number;
}

/** Queued frames past this many bytes are written at once, not at the end of the turn (bounds memory in a long synchronous loop). */
const WRITE_AT_BYTES = 1 << 20;

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

  private readonly segments: SegmentFile[] = [];
  private active: SegmentFile;
  private nextSeq: number;
  private readonly replayBefore: number;
  private bytes = 0;
  private readonly dirty = new Set<SegmentFile>();
  private dirDirty = false;
  private readonly commit: GroupCommit;
  private closing: Promise<void> | undefined;
  private counts = { appended: 0, acked: 0, refused: 0, torn: 0, ackWriteFailures: 0, writeErrors: 0 };
  /** Segments with frames appended and not written yet. */
  private readonly unwritten = new Set<SegmentFile>();
  private writeScheduled = false;
  /** Why the last write of queued frames failed; cleared by the next one that succeeds. */
  private writeError: unknown;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly writeTurn = (): void => {
    this.writeScheduled = false;
    this.writeAll();
  };

  private constructor(
    /** The spool's directory. */
    readonly dir: string,
    options: ResolvedSpoolOptions,
    private readonly lock: SpoolLock,
    private readonly dirFd: number,
  ) {
    this.options = options;
    this.commit = new GroupCommit(options.syncIntervalMs, () => this.flushDirty());
    let nextSeq = 1;
    for (const file of readdirSync(dir).sort()) {
      const firstSeq = parseSegmentName(file);
      if (firstSeq === undefined) continue;
      const { segment, torn } = SegmentFile.load(dir, firstSeq);
      this.counts.torn += torn;
      this.segments.push(segment);
      nextSeq = Math.max(nextSeq, firstSeq, segment.lastSeq + 1);
    }
    this.nextSeq = nextSeq;
    this.replayBefore = nextSeq;
    // A new segment per process: nothing is ever written after a previous process's (torn) tail.
    // An empty segment already named so (its process died before writing) is taken over.
    const same = this.segments.findIndex((segment) => segment.firstSeq === nextSeq);
    if (same >= 0) this.segments.splice(same, 1);
    this.active = SegmentFile.create(dir, nextSeq, same >= 0 ? 'w' : 'wx');
    this.segments.push(this.active);
    this.dirDirty = true;
    this.commit.wrote();
    // Fully acked segments go only now: the new segment's name keeps the highest seq on disk.
    for (const segment of this.segments.filter((s) => s !== this.active && s.pending === 0)) this.remove(segment);
    for (const file of readdirSync(dir)) this.removeOrphanAcks(file);
    for (const segment of this.segments) this.bytes += segment.logBytes + segment.ackBytes;
  }

  /**
   * Opens (creating it if needed) the spool in `dir`: takes its lock (`SpoolLockedError` when another
   * live process holds it; a dead holder's lock is taken over), reads every segment back (torn records
   * skipped, counted and cut off) and starts a new segment. Synchronous: it reads the segments once.
   * Options: `maxBytes` 256 MiB, `syncIntervalMs` 200 ms, `segmentBytes` 8 MiB (see `SpoolOptions`).
   */
  static open(dir: string, options: SpoolOptions = {}): Spool {
    const resolved = resolveSpoolOptions(options);
    mkdirSync(dir, { recursive: true });
    const lock = SpoolLock.acquire(dir);
    let dirFd: number | undefined;
    try {
      dirFd = openSync(dir, 'r');
      return new Spool(dir, resolved, lock, dirFd);
    } catch (error) {
      if (dirFd !== undefined) closeSync(dirFd);
      lock.release();
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
    if (this.writeError !== undefined && !this.writeAll()) {
      const error = this.writeError as NodeJS.ErrnoException;
      this.counts.refused++;
      if (!isDiskFull(error)) throw error;
      throw new SpoolFullError(this.dir, 'disk-full', `${error.code}: ${error.message}`, { cause: error });
    }
    const length = typeof record === 'string' ? Buffer.byteLength(record, 'utf8') : record.length;
    const size = FRAME_HEADER_BYTES + length;
    if (size > this.options.segmentBytes) {
      throw new RangeError(
        `Spool ${this.dir}: a record of ${length} bytes does not fit in a segment (spool.segmentBytes ${this.options.segmentBytes}, ${FRAME_HEADER_BYTES} of them the header). Raise segmentBytes or send smaller records.`,
      );
    }
    if (this.bytes + size > this.options.maxBytes && this.active.logBytes > 0 && this.active.pending === 0) {
      // Every record of the active segment is acked, yet its bytes (and its acks') still count until a
      // roll deletes it: roll now. Otherwise a spool of about one segment (maxBytes under 8 MiB leaves
      // segmentBytes = maxBytes) would refuse every record for good once it had filled and drained.
      try {
        this.roll();
      } catch (error) {
        if (!isDiskFull(error)) throw error; // no room for a new segment: refused below
      }
    }
    if (this.bytes + size > this.options.maxBytes) {
      this.counts.refused++;
      throw new SpoolFullError(this.dir, 'max-bytes', `${this.bytes} of ${this.options.maxBytes} bytes in use, the record needs ${size}`);
    }
    try {
      if (this.active.logBytes > 0 && this.active.logBytes + size > this.options.segmentBytes) this.roll();
      const seq = this.nextSeq;
      const timestamp = Date.now();
      this.active.append(encodeFrame(seq, timestamp, record, length), seq, timestamp);
      this.nextSeq++;
      this.bytes += size;
      this.counts.appended++;
      this.dirty.add(this.active);
      this.unwritten.add(this.active);
      this.commit.wrote();
      if (this.active.unwrittenBytes >= WRITE_AT_BYTES) this.writeAll();
      else if (!this.writeScheduled) {
        this.writeScheduled = true;
        setImmediate(this.writeTurn);
      }
      return seq;
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      this.counts.refused++;
      throw new SpoolFullError(this.dir, 'disk-full', `${error.code}: ${error.message}`, { cause: error });
    }
  }

  /**
   * Confirms records (their sink delivered them): each is written to its segment's `.acks` file,
   * made durable by the same group commit; a segment whose records are all acked is deleted with its
   * ack file. Unknown or already acked seqs are ignored. Returns how many records were newly acked.
   */
  ack(seqs: number | readonly number[]): number {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    const bySegment = new Map<SegmentFile, number[]>();
    for (const seq of typeof seqs === 'number' ? [seqs] : seqs) {
      const segment = this.segmentOf(seq);
      if (!segment?.ack(seq)) continue;
      let list = bySegment.get(segment);
      if (!list) bySegment.set(segment, (list = []));
      list.push(seq);
    }
    let acked = 0;
    for (const [segment, list] of bySegment) {
      acked += list.length;
      if (segment.pending === 0 && segment !== this.active) {
        this.remove(segment);
        continue;
      }
      const before = segment.ackBytes;
      try {
        segment.writeAcks(list);
      } catch (error) {
        if (!isDiskFull(error)) throw error;
        this.counts.ackWriteFailures += list.length;
        continue;
      }
      this.bytes += segment.ackBytes - before;
      this.dirty.add(segment);
      this.commit.wrote();
    }
    this.counts.acked += acked;
    return acked;
  }

  /**
   * The records a previous process left un-acked (found when this spool was opened), in sequence
   * order, skipping those acked since. Torn records are never yielded (they were counted at open).
   * Records appended by this process are not replayed: their owner still holds them in memory.
   */
  *replay(): Generator<SpoolRecord> {
    for (const segment of [...this.segments]) {
      if (segment.firstSeq >= this.replayBefore) break;
      if (segment.pending === 0 || segment.deleted) continue;
      let bytes: Buffer;
      try {
        bytes = readFileSync(segment.logPath);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted while replaying
        throw error;
      }
      for (const frame of scanFrames(bytes).frames) {
        if (frame.seq >= this.replayBefore) return;
        if (segment.isPending(frame.seq)) yield { seq: frame.seq, timestamp: frame.timestamp, payload: framePayload(bytes, frame) };
      }
    }
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
    const records: SpoolRecord[] = [];
    const missing: number[] = [];
    for (const segment of this.segments) {
      const left = limit - records.length - missing.length;
      if (left <= 0) break;
      if (segment.lastSeq <= afterSeq || segment.pending === 0) continue;
      const seqs = segment.pendingAfter(afterSeq, left);
      const read = segment.read(seqs);
      let r = 0;
      for (const seq of seqs) {
        if (r < read.length && read[r]!.seq === seq) records.push(read[r++]!);
        else missing.push(seq);
      }
    }
    return { records, missing };
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
    for (const segment of this.segments) {
      pendingRecords += segment.pending;
      oldest ??= segment.oldestPendingTime();
    }
    return {
      pendingRecords,
      bytesOnDisk: this.bytes,
      oldestPendingAgeMs: oldest === undefined ? 0 : Math.max(0, Date.now() - oldest),
      segments: this.segments.length,
      appended: this.counts.appended,
      acked: this.counts.acked,
      refused: this.counts.refused,
      fsyncs: this.commit.fsyncs,
      syncErrors: this.commit.errors,
      tornRecords: this.counts.torn,
      ackWriteFailures: this.counts.ackWriteFailures,
      writeErrors: this.counts.writeErrors,
      unwrittenBytes: [...this.unwritten].reduce((sum, segment) => sum + segment.unwrittenBytes, 0),
      unwrittenRecords: [...this.unwritten].reduce((sum, segment) => sum + segment.unwrittenRecords, 0),
    };
  }

  /**
   * Writes and fsyncs what is left, closes the files and releases the lock. Idempotent. Records the
   * disk still refuses then are lost: `stats().unwrittenRecords` counts them afterwards.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        if (this.retryTimer) clearTimeout(this.retryTimer);
        this.writeAll(); // a failure is counted; the group commit below tries once more
        await this.commit.flushNow();
      } finally {
        for (const segment of this.segments) segment.close();
        closeSync(this.dirFd);
        this.lock.release();
      }
    })();
    return this.closing;
  }

  private roll(): void {
    const next = SegmentFile.create(this.dir, this.nextSeq);
    const previous = this.active;
    previous.seal();
    this.active = next;
    this.segments.push(next);
    this.dirDirty = true;
    if (previous.pending === 0) this.remove(previous);
  }

  private remove(segment: SegmentFile): void {
    this.unwritten.delete(segment);
    this.bytes -= segment.logBytes + segment.ackBytes;
    segment.delete();
    this.segments.splice(this.segments.indexOf(segment), 1);
    this.dirty.delete(segment);
  }

  /** The segment whose range holds `seq` (segments are in seq order). */
  private segmentOf(seq: number): SegmentFile | undefined {
    let low = 0;
    let high = this.segments.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const segment = this.segments[mid]!;
      if (seq < segment.firstSeq) high = mid - 1;
      else if (seq > segment.lastSeq) low = mid + 1;
      else return segment;
    }
    return undefined;
  }

  private removeOrphanAcks(file: string): void {
    const match = /^(segment-\d+)\.acks$/.exec(file);
    if (!match || this.segments.some((segment) => segment.ackPath === join(this.dir, file))) return;
    try {
      unlinkSync(join(this.dir, file));
    } catch {
      // Another attempt at the next open.
    }
  }

  /**
   * Writes the records appended so far now, rather than at the end of the turn (what a caller does when
   * it is about to confirm them elsewhere). Returns whether everything was written; a failure is kept
   * and handled as at the end of a turn.
   */
  writeNow(): boolean {
    return this.closing ? false : this.writeAll();
  }

  /**
   * Writes every segment's queued frames. On a failure the rest stays queued, the error is kept (new
   * appends are refused while it lasts) and a retry is timed; returns whether everything was written.
   */
  private writeAll(): boolean {
    for (const segment of this.unwritten) {
      try {
        segment.writeQueued();
      } catch (error) {
        this.counts.writeErrors++;
        this.writeError = error;
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = undefined;
          if (!this.closing) this.writeAll();
        }, Math.max(50, this.options.syncIntervalMs)).unref();
        return false;
      }
      this.unwritten.delete(segment);
    }
    this.writeError = undefined;
    return true;
  }

  private async flushDirty(): Promise<number> {
    if (!this.writeAll()) throw this.writeError;
    const segments = [...this.dirty];
    this.dirty.clear();
    const dir = this.dirDirty;
    this.dirDirty = false;
    const counts = await Promise.all([...segments.map((segment) => segment.sync()), dir ? fsyncAsync(this.dirFd).then(() => 1) : 0]);
    return counts.reduce((sum, n) => sum + n, 0);
  }
}
