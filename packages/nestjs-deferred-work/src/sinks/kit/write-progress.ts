import type { SinkItemFailure, SinkWriteResult } from '../../core/sink.interface';
import { failureCode } from './failure-codes';

/**
 * What one write has confirmed so far, entry by entry, so that a write cut short by its signal
 * resolves with what the server did confirm — those count as delivered and are not sent again — and
 * the rest failed as retryable, instead of throwing and losing that progress. Pass the signal to the
 * client as well where it takes one (fetch, the AWS SDK's `abortSignal`), or cancel the statement
 * server-side: racing a promise leaves the call running.
 *
 * Every failure keeps a code: the one the sink gave, else the one its error carries (`failureCode`:
 * the client's or the server's, or the errno of a client's codeless connection error), and `ETIMEDOUT`
 * for the entries not confirmed when the write's timeout cut it short.
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
    let code: string | undefined | null = null;
    for (const index of indexes) {
      if (this.failures.has(index) || this.confirmed.has(index)) continue;
      const failure: SinkItemFailure = { index, error };
      if (retryable !== undefined) failure.retryable = retryable;
      if (code === null) code = failureCode(error);
      if (code !== undefined) failure.code = code;
      this.failures.set(index, failure);
    }
  }

  /** Records a per-entry failure as the sink built it (its `index` is the batch's); without a code, the one its error carries. */
  failEntry(failure: SinkItemFailure): void {
    if (this.failures.has(failure.index) || this.confirmed.has(failure.index)) return;
    if (failure.code === undefined) {
      const code = failureCode(failure.error);
      if (code !== undefined) failure = { ...failure, code };
    }
    this.failures.set(failure.index, failure);
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
   * answered), else failed as retryable with `reason` (the write was cut short before they were
   * confirmed), with its code (`ETIMEDOUT` for the write's timeout).
   */
  result(complete: boolean, reason?: unknown): SinkWriteResult | undefined {
    if (!complete) {
      const error = reason ?? new Error('cut short before it was confirmed');
      const code = failureCode(error);
      for (let index = 0; index < this.size; index++) {
        if (this.confirmed.has(index) || this.failures.has(index)) continue;
        const failure: SinkItemFailure = { index, error, retryable: true };
        if (code !== undefined) failure.code = code;
        this.failures.set(index, failure);
      }
    }
    if (this.failures.size === 0) return undefined;
    return { failed: [...this.failures.values()].sort((a, b) => a.index - b.index) };
  }
}
