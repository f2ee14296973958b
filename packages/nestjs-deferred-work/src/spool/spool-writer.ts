import { encodeFrame, FRAME_HEADER_BYTES } from './frame';
import type { GroupCommit } from './group-commit';
import { isDiskFull } from './disk-full';
import type { QueuedWrites } from './queued-writes';
import type { SegmentFile } from './segment-file';
import type { SegmentSet } from './segment-set';
import { SpoolFullError } from './spool-full.error';
import type { ResolvedSpoolOptions } from './spool.options';

/**
 * The spool's write side (see `Spool`): appends records to the active segment, writes acks and batch
 * marks to the segments' ack files, rolls to a new segment when one is full or drained, counts each
 * write for the group commit, and refuses (`SpoolFullError`) what `maxBytes` or the disk does not take.
 */
export class SpoolWriter {
  /** What was written and refused, for `Spool.stats()`. */
  readonly counts = { appended: 0, acked: 0, refused: 0, ackWriteFailures: 0, bytesWritten: 0 };

  constructor(
    private readonly dir: string,
    private readonly options: ResolvedSpoolOptions,
    private readonly segments: SegmentSet,
    private readonly commit: GroupCommit,
    private readonly writes: QueuedWrites,
    /** The seq of the next record appended. */
    private nextSeq: number,
  ) {}

  /** See `Spool.append` (the spool is open). */
  append(record: Buffer | string): number {
    if (this.writes.error !== undefined && !this.writes.writeAll()) {
      const error = this.writes.error as NodeJS.ErrnoException;
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
    const { active } = this.segments;
    if (this.segments.bytes + size > this.options.maxBytes && active.logBytes > 0 && active.pending === 0) {
      // Every record of the active segment is acked, yet its bytes (and its acks') still count until a
      // roll deletes it: roll now. Otherwise a spool of about one segment (maxBytes under 8 MiB leaves
      // segmentBytes = maxBytes) would refuse every record for good once it had filled and drained.
      try {
        this.segments.roll(this.nextSeq);
      } catch (error) {
        if (!isDiskFull(error)) throw error; // no room for a new segment: refused below
      }
    }
    if (this.segments.bytes + size > this.options.maxBytes) {
      this.counts.refused++;
      throw new SpoolFullError(this.dir, 'max-bytes', `${this.segments.bytes} of ${this.options.maxBytes} bytes in use, the record needs ${size}`);
    }
    try {
      const full = this.segments.active.logBytes > 0 && this.segments.active.logBytes + size > this.options.segmentBytes;
      if (full) this.segments.roll(this.nextSeq);
      const seq = this.nextSeq;
      const timestamp = Date.now();
      const target = this.segments.active;
      target.append(encodeFrame(seq, timestamp, record, length), seq, timestamp);
      this.nextSeq++;
      this.segments.bytes += size;
      this.counts.appended++;
      this.counts.bytesWritten += size;
      this.segments.touched(target);
      this.commit.wrote();
      this.writes.queued(target);
      return seq;
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      this.counts.refused++;
      throw new SpoolFullError(this.dir, 'disk-full', `${error.code}: ${error.message}`, { cause: error });
    }
  }

  /** See `Spool.ack` (the spool is open). */
  ack(seqs: number | readonly number[]): number {
    const bySegment = new Map<SegmentFile, number[]>();
    for (const seq of typeof seqs === 'number' ? [seqs] : seqs) {
      const segment = this.segments.find(seq);
      if (!segment?.ack(seq)) continue;
      let list = bySegment.get(segment);
      if (!list) bySegment.set(segment, (list = []));
      list.push(seq);
    }
    let acked = 0;
    for (const [segment, list] of bySegment) {
      acked += list.length;
      if (segment.pending === 0 && segment !== this.segments.active) {
        this.segments.remove(segment);
        continue;
      }
      if (segment.pending === 0 && this.rollDrained()) continue;
      const before = segment.ackBytes;
      try {
        segment.writeAcks(list);
      } catch (error) {
        if (!isDiskFull(error)) throw error;
        this.counts.ackWriteFailures += list.length;
        continue;
      }
      this.segments.bytes += segment.ackBytes - before;
      this.counts.bytesWritten += segment.ackBytes - before;
      this.segments.touched(segment);
      this.commit.wrote();
    }
    this.counts.acked += acked;
    return acked;
  }

  /** See `Spool.markBatch` (the spool is open). */
  markBatch(seq: number, count: number): void {
    const segment = this.segments.find(seq);
    if (!segment?.isPending(seq)) return;
    const before = segment.ackBytes;
    try {
      segment.writeMark(seq, count);
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      this.counts.ackWriteFailures++;
      return;
    }
    this.segments.bytes += segment.ackBytes - before;
    this.counts.bytesWritten += segment.ackBytes - before;
    this.segments.touched(segment);
    this.commit.wrote();
  }

  /**
   * Every record of the active segment is acked: starts a new (empty) one, which deletes it, so a
   * spool with nothing pending holds no bytes. Returns `false` when the disk refused the new file (the
   * acks are then written as usual).
   */
  private rollDrained(): boolean {
    try {
      this.segments.roll(this.nextSeq);
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      return false;
    }
    this.commit.wrote(); // the directory entries
    return true;
  }
}
