import type { SegmentFile } from './segment-file';

/** Queued frames past this many bytes are written at once, not at the end of the turn (bounds memory in a long synchronous loop). */
const WRITE_AT_BYTES = 1 << 20;

/**
 * The spool's appended frames on their way to the segment files: queued in memory by the segments,
 * written together at the end of the event-loop turn (at once past 1 MiB). A write the disk refuses
 * is kept as `error` (the spool refuses appends while it lasts) and retried on a timer.
 */
export class QueuedWrites {
  /** Writes the disk refused. */
  errors = 0;
  /** Why the last write failed; cleared by the next one that succeeds. */
  error: unknown;

  /** Segments with frames appended and not written yet. */
  private readonly unwritten = new Set<SegmentFile>();
  private scheduled = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly writeTurn = (): void => {
    this.scheduled = false;
    this.writeAll();
  };

  constructor(
    /** Delay before a refused write is tried again (at least 50 ms). */
    private readonly retryMs: number,
    /** Whether the spool is closing: no retry then. */
    private readonly closing: () => boolean,
  ) {}

  /** `segment` has a frame queued: write it at the end of the turn, or now past 1 MiB. */
  queued(segment: SegmentFile): void {
    this.unwritten.add(segment);
    if (segment.unwrittenBytes >= WRITE_AT_BYTES) this.writeAll();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.writeTurn);
    }
  }

  /** `segment` is deleted: nothing of it is left to write. */
  forget(segment: SegmentFile): void {
    this.unwritten.delete(segment);
  }

  /**
   * Writes every segment's queued frames. On a failure the rest stays queued, the error is kept and a
   * retry is timed; returns whether everything was written.
   */
  writeAll(): boolean {
    for (const segment of this.unwritten) {
      try {
        segment.writeQueued();
      } catch (error) {
        this.errors++;
        this.error = error;
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = undefined;
          if (!this.closing()) this.writeAll();
        }, Math.max(50, this.retryMs)).unref();
        return false;
      }
      this.unwritten.delete(segment);
    }
    this.error = undefined;
    return true;
  }

  /** Stops the retry timer (closing). */
  stop(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  /** Bytes of frames not written yet. */
  get bytes(): number {
    return [...this.unwritten].reduce((sum, segment) => sum + segment.unwrittenBytes, 0);
  }

  /** Records not acked whose frames are not written yet. */
  get records(): number {
    return [...this.unwritten].reduce((sum, segment) => sum + segment.unwrittenRecords, 0);
  }
}
