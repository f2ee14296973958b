import { errorMessage } from '../../core/error-message';
import type { SinkWriteResult } from '../../core/sink.interface';
import type { Entry, Failure } from './entry';

/** Validates a sink's partial-failure result; a malformed one throws (the caller fails the whole write). */
export function failuresOf(result: void | SinkWriteResult, entries: Entry[], sinkName: string): Failure[] {
  const failed = (result as SinkWriteResult | undefined)?.failed;
  if (failed === undefined || failed === null) return [];
  if (!Array.isArray(failed)) {
    throw new Error(`sink "${sinkName}" returned a malformed result ("failed" must be an array of { index, error })`);
  }
  const seen = new Set<number>();
  const failures: Failure[] = [];
  for (const failure of failed) {
    const index = (failure as { index?: unknown } | null)?.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= entries.length) {
      throw new Error(`sink "${sinkName}" reported a failure with an invalid index (${String(index)})`);
    }
    if (seen.has(index)) continue;
    seen.add(index);
    failures.push({ entry: entries[index], retryable: failure.retryable !== false, message: errorMessage(failure.error) });
  }
  return failures;
}

/** The log line of a write that failed in whole or part. */
export function failureSummary(failures: Failure[], total: number): string {
  return failures.length === total ? failures[0].message : `${failures.length} of ${total} items failed: ${failures[0].message}`;
}
