interface Waiter {
  readonly target: number;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: writes are counted as they happen; at most `intervalMs` after the first unsynced
 * one, a single round of `flush()` (the fsyncs of everything written since the last round) makes them
 * all durable at once. `synced()` resolves when every write counted before the call is durable.
 * The timer is `unref()`'d, except while someone awaits `synced()`.
 */
export class GroupCommit {
  /** Fsync calls made by all rounds. */
  fsyncs = 0;
  /** Rounds whose fsync failed (their writes may not be durable; their waiters were rejected). */
  errors = 0;

  private written = 0;
  private durable = 0;
  private failedUpTo = 0;
  private lastError: unknown;
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly intervalMs: number,
    /** Fsyncs what was written since its last call; resolves with the number of fsyncs made. */
    private readonly flush: () => Promise<number>,
  ) {}

  /** Counts one write, to be made durable by the next round. */
  wrote(): void {
    this.written++;
    this.arm();
  }

  /** Resolves when every write counted so far is durable; rejects when their round's fsync failed. */
  synced(): Promise<void> {
    const target = this.written;
    if (this.durable >= target) return Promise.resolve();
    if (this.failedUpTo >= target && !this.running && !this.timer) return Promise.reject(this.lastError);
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ target, resolve, reject });
      this.timer?.ref();
    });
  }

  /** Runs a round now (after the one in flight) and stops the timer: for closing. */
  async flushNow(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    if (this.written > Math.max(this.durable, this.failedUpTo)) await this.round();
  }

  private arm(): void {
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.round();
    }, this.intervalMs);
    if (this.waiters.length === 0) this.timer.unref();
  }

  private round(): Promise<void> {
    const target = this.written;
    const run = (async () => {
      try {
        this.fsyncs += await this.flush();
        this.durable = target;
        this.settle(target, undefined, false);
      } catch (error) {
        this.errors++;
        this.failedUpTo = target;
        this.lastError = error;
        this.settle(target, error, true);
      } finally {
        this.running = undefined;
        if (this.written > target) this.arm();
      }
    })();
    this.running = run;
    return run;
  }

  private settle(target: number, error: unknown, failed: boolean): void {
    const due = this.waiters.filter((waiter) => waiter.target <= target);
    this.waiters = this.waiters.filter((waiter) => waiter.target > target);
    for (const waiter of due) {
      if (failed) waiter.reject(error);
      else waiter.resolve();
    }
  }
}
