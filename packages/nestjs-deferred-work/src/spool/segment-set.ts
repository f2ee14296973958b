import { fsync } from 'node:fs';
import { promisify } from 'node:util';
import type { QueuedWrites } from './queued-writes';
import { SegmentFile } from './segment-file';
import { removeOrphanAcks } from './spool-recovery';

const fsyncAsync = promisify(fsync);

/**
 * The spool's segments, in seq order, the last one active (appended to): what they weigh on disk,
 * which files the next group commit must fsync, rolling to a new segment and deleting a drained one.
 */
export class SegmentSet {
  /** Every segment on disk, in seq order; the active one last. */
  readonly list: SegmentFile[];
  /** The segment appended to. */
  active: SegmentFile;
  /** Bytes of the segment and ack files, what `maxBytes` bounds. */
  bytes = 0;

  private readonly dirty = new Set<SegmentFile>();
  private dirDirty = false;

  /**
   * Takes over the segments a previous process left and starts a new active one at `nextSeq`
   * (nothing is ever written after a previous process's, possibly torn, tail).
   */
  constructor(
    private readonly dir: string,
    recovered: readonly SegmentFile[],
    nextSeq: number,
    private readonly writes: QueuedWrites,
  ) {
    this.list = [...recovered];
    // An empty segment already named so (its process died before writing) is taken over.
    const same = this.list.findIndex((segment) => segment.firstSeq === nextSeq);
    if (same >= 0) this.list.splice(same, 1);
    this.active = SegmentFile.create(dir, nextSeq, same >= 0 ? 'w' : 'wx');
    this.list.push(this.active);
    this.dirDirty = true;
    // Counted before the fully acked ones go (removing one subtracts its bytes).
    for (const segment of this.list) this.bytes += segment.logBytes + segment.ackBytes;
    // Fully acked segments go only now: the new segment's name keeps the highest seq on disk.
    for (const segment of this.list.filter((s) => s !== this.active && s.pending === 0)) this.remove(segment);
    removeOrphanAcks(dir, this.list);
  }

  /** Seals the active segment and starts a new one at `nextSeq`; the old one goes if nothing in it is pending. */
  roll(nextSeq: number): void {
    const next = SegmentFile.create(this.dir, nextSeq);
    const previous = this.active;
    previous.seal();
    this.active = next;
    this.list.push(next);
    this.dirDirty = true;
    if (previous.pending === 0) this.remove(previous);
  }

  /** Deletes `segment`'s files and forgets it. */
  remove(segment: SegmentFile): void {
    this.writes.forget(segment);
    this.bytes -= segment.logBytes + segment.ackBytes;
    segment.delete();
    this.list.splice(this.list.indexOf(segment), 1);
    this.dirty.delete(segment);
  }

  /** The segment whose range holds `seq` (segments are in seq order). */
  find(seq: number): SegmentFile | undefined {
    let low = 0;
    let high = this.list.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const segment = this.list[mid]!;
      if (seq < segment.firstSeq) high = mid - 1;
      else if (seq > segment.lastSeq) low = mid + 1;
      else return segment;
    }
    return undefined;
  }

  /** `segment` was written to: the next group commit fsyncs it. */
  touched(segment: SegmentFile): void {
    this.dirty.add(segment);
  }

  /** Fsyncs the segments written since the last call, and the directory when a file came or went; resolves with the number of fsyncs. */
  async sync(dirFd: number): Promise<number> {
    const segments = [...this.dirty];
    this.dirty.clear();
    const dir = this.dirDirty;
    this.dirDirty = false;
    const counts = await Promise.all([...segments.map((segment) => segment.sync()), dir ? fsyncAsync(dirFd).then(() => 1) : 0]);
    return counts.reduce((sum, n) => sum + n, 0);
  }
}
