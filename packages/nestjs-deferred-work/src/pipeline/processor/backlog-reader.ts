import { errorMessage } from '../../core/error-message';
import type { Entry } from './entry';
import type { SinkSpool } from './sink-spool';

/**
 * A spooled sink's backlog as its processor reads it: the records on disk only (waiting behind a full
 * memory queue, or left by a previous process), read back in order a few batches at a time. Not read
 * before `start()` (the sinks are attached then). A read the disk refuses (EMFILE, EIO) leaves the
 * backlog as it was and pauses reading, with a backoff (100 ms doubling to `maxBackoffMs`).
 */
export class BacklogReader {
  private holding = true;
  /** After the disk refused a read: how long the next try waits (ms; 0 when not paused). */
  private pausedFor = 0;
  private lastPause = 0;

  constructor(
    private readonly spool: SinkSpool,
    /** The last seq replayed from a previous process (those items count by kind when read back). */
    private readonly replayedUpTo: number,
    private readonly maxBackoffMs: number,
    private readonly hooks: { failed(message: string): void; resume(): void; countKind(kind: string): void },
  ) {}

  start(): void {
    this.holding = false;
  }

  /** Backlog this process owes now (started, records on disk only): what `flush()` and the drain wait for. */
  get owed(): boolean {
    return !this.holding && this.spool.backlog > 0;
  }

  /** Backlog that can be read now: owed, and not paused by a read error. */
  get ready(): boolean {
    return this.owed && this.pausedFor === 0;
  }

  /**
   * Up to `room` records as new entries, in order, with how many could not be read back; `undefined`
   * when the disk refused the read (reading pauses, and `hooks.resume()` is called when it may go on).
   */
  read(room: number): { entries: Entry[]; unreadable: number } | undefined {
    let paged: ReturnType<SinkSpool['pageIn']>;
    try {
      paged = this.spool.pageIn(room);
    } catch (error) {
      this.pause(error);
      return undefined;
    }
    this.lastPause = 0;
    const now = Date.now();
    const entries = paged.records.map((record) => {
      // A previous process's item, accepted again by this one at bootstrap: counted by kind now that its kind is known.
      if (record.spoolSeq <= this.replayedUpTo) this.hooks.countKind(record.item.kind);
      const entry: Entry = { item: record.item, attempts: 0, seq: record.spoolSeq, spoolSeq: record.spoolSeq, bytes: record.bytes, since: now };
      if (record.batch !== undefined) entry.marked = record.batch;
      return entry;
    });
    return { entries, unreadable: paged.unreadable };
  }

  private pause(error: unknown): void {
    this.pausedFor = this.lastPause = Math.min(Math.max(100, this.lastPause * 2), Math.max(100, this.maxBackoffMs));
    this.hooks.failed(`could not read ${this.spool.backlog} spooled item(s) back from ${this.spool.dir}: ${errorMessage(error)}; trying again in ${this.pausedFor} ms`);
    setTimeout(() => {
      this.pausedFor = 0;
      this.hooks.resume();
    }, this.pausedFor).unref();
  }
}
