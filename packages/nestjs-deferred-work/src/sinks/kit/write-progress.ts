import type { SinkItemFailure, SinkWriteResult } from '../../core/sink.interface';

/**
 * What one write has confirmed so far, entry by entry, so that a write cut short by its signal
 * resolves with what the server did confirm — those count as delivered and are not sent again — and
 * the rest failed as retryable, instead of throwing and losing that progress. Pass the signal to the
 * client as well where it takes one (fetch, the AWS SDK's `abortSignal`), or cancel the statement
 * server-side: racing a promise leaves the call running.
 */
export class WriteProgress {
  private readonly failures = new Map<number, SinkItemFailure>();
  private readonly confirmed = new Set<number>();

  /** @param size Entries in the write (indexes `0 … size - 1` of its batch). */
  constructor(private readonly size: number) {}

  /** The server confirmed these entries (those already failed stay failed). */
  confirm(indexes: Iterable<number>): void {
    for (const index of indexes) if (!this.failures.has(index)) this.confirmed.add(index);
  }

  /** The server confirmed this entry (one already failed stays failed). */
  confirmOne(index: number): void {
    if (!this.failures.has(index)) this.confirmed.add(index);
  }

  /** These entries failed (the first failure of an entry wins). */
  fail(indexes: Iterable<number>, error: unknown, retryable?: boolean): void {
    for (const index of indexes) {
      if (this.failures.has(index) || this.confirmed.has(index)) continue;
      const failure: SinkItemFailure = { index, error };
      if (retryable !== undefined) failure.retryable = retryable;
      this.failures.set(index, failure);
    }
  }

  /** Records a per-entry failure as the sink built it (its `index` is the batch's). */
  failEntry(failure: SinkItemFailure): void {
    if (!this.failures.has(failure.index) && !this.confirmed.has(failure.index)) this.failures.set(failure.index, failure);
  }

  /**
   * Waits for `work`, or until `signal` aborts, whichever comes first (the work's late rejection is
   * handled). Resolves `true` when the work ended, `false` when the signal cut it short.
   */
  async until(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
    work.catch(() => undefined);
    if (signal.aborted) return false;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<false>((resolve) => signal.addEventListener('abort', (onAbort = () => resolve(false)), { once: true }));
    try {
      return await Promise.race([work.then(() => true as const, () => true as const), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /**
   * The write's result. Entries neither confirmed nor failed: delivered when `complete` (every call
   * answered), else failed as retryable with `reason` (the write was cut short before they were confirmed).
   */
  result(complete: boolean, reason?: unknown): SinkWriteResult | undefined {
    if (!complete) {
      for (let index = 0; index < this.size; index++) {
        if (!this.confirmed.has(index) && !this.failures.has(index)) this.failures.set(index, { index, error: reason ?? new Error('cut short before it was confirmed'), retryable: true });
      }
    }
    if (this.failures.size === 0) return undefined;
    return { failed: [...this.failures.values()].sort((a, b) => a.index - b.index) };
  }
}
