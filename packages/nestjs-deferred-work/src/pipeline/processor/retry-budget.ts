import type { SinkProcessorOptions } from '../../core/sink.interface';
import type { Entry, Failure } from './entry';
import type { Outage } from './outage';

/** Where the failures of one write go. */
export interface FailureSorting {
  /** Retried. */
  retry: Entry[];
  /** Dead-lettered `not-retryable`. */
  notRetryable: Failure[];
  /** Dead-lettered `attempts-exhausted` (the `maxAttempts` cap, or the one try of inline mode), or `shutdown` when stopping. */
  exhausted: Failure[];
  /** Dead-lettered `expired`: the retry budget (`maxRetryDurationMs`) ran out. */
  expired: Failure[];
  /** Sent to the back of the sink's spool (past their budget, with a spool that takes them). */
  requeue: Entry[];
}

/**
 * Sorts a write's failures: a permanent one is dead-lettered at once; a transient one is retried
 * until its time budget (`maxRetryDurationMs`, from `Entry.retryFrom`) or the optional `maxAttempts`
 * cap runs out — or, with a spool that requeues, sent to the back of the spool instead.
 */
export function sortFailures(
  failures: readonly Failure[],
  options: Pick<SinkProcessorOptions, 'maxAttempts' | 'maxRetryDurationMs'>,
  outage: Outage,
  how: { oneTry: boolean; stopping: boolean; requeues: boolean },
  now: number,
): FailureSorting {
  const sorted: FailureSorting = { retry: [], notRetryable: [], exhausted: [], expired: [], requeue: [] };
  for (const failure of failures) {
    const entry = failure.entry;
    if (!failure.retryable) {
      sorted.notRetryable.push(failure);
      continue;
    }
    entry.retryFrom ??= outage.retryFrom(entry, now);
    if (how.oneTry || how.stopping) {
      sorted.exhausted.push(failure);
      continue;
    }
    const capped = entry.attempts >= options.maxAttempts;
    const spent = now - entry.retryFrom >= options.maxRetryDurationMs;
    if (how.requeues && (capped || spent)) sorted.requeue.push(entry);
    else if (capped) sorted.exhausted.push(failure);
    else if (spent) sorted.expired.push(failure);
    else sorted.retry.push(entry);
  }
  return sorted;
}
