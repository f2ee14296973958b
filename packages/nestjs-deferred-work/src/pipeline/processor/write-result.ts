import { errorCode, errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItemFailure, SinkWriteResult } from '../../core/sink.interface';
import type { Entry, Failure } from './entry';
import { itemWatch } from '../item-watch';
import type { DeadLetter, DeadLetterReason } from '../../core/dead-letter.interface';

/** What a sink's write said of its entries: the failures, and how many it skipped as duplicates. */
export interface WriteOutcome {
  failures: Failure[];
  duplicates: number;
}

const NONE: WriteOutcome = Object.freeze({ failures: [], duplicates: 0 }) as WriteOutcome;

/**
 * Validates a sink's partial-failure result; a malformed one throws (the caller fails the whole
 * write). A failure's `retryable`, `retryAfterMs` and `code` come from the failure itself, else from
 * its error when that is a `SinkWriteError`: one shape, whichever way a sink reports.
 */
export function outcomeOf(result: void | SinkWriteResult, entries: Entry[], sinkName: string): WriteOutcome {
  const written = result as SinkWriteResult | undefined;
  const failed = written?.failed;
  const duplicates = written?.duplicates;
  if ((failed === undefined || failed === null) && (duplicates === undefined || duplicates === null)) return NONE;
  if (failed !== undefined && failed !== null && !Array.isArray(failed)) {
    throw new Error(`sink "${sinkName}" returned a malformed result ("failed" must be an array of { index, error })`);
  }
  if (duplicates !== undefined && duplicates !== null && !Array.isArray(duplicates)) {
    throw new Error(`sink "${sinkName}" returned a malformed result ("duplicates" must be an array of indexes)`);
  }
  const seen = new Set<number>();
  const failures: Failure[] = [];
  for (const failure of failed ?? []) {
    const index = checkIndex((failure as { index?: unknown } | null)?.index, entries.length, sinkName);
    if (seen.has(index)) continue;
    seen.add(index);
    failures.push(failureOf(entries[index], failure));
  }
  let skipped = 0;
  for (const index of duplicates ?? []) {
    if (!seen.has(checkIndex(index, entries.length, sinkName))) skipped++;
  }
  return { failures, duplicates: skipped };
}

/** One entry's failure, with what its error says where the failure itself is silent. */
export function failureOf(entry: Entry, failure: Omit<SinkItemFailure, 'index'>): Failure {
  const error = failure.error;
  const typed = error instanceof SinkWriteError ? error : undefined;
  const retryAfterMs = failure.retryAfterMs ?? typed?.retryAfterMs;
  const code = failure.code ?? typed?.code ?? errorCode(error);
  const out: Failure = { entry, retryable: (failure.retryable ?? typed?.retryable) !== false, message: errorMessage(error) };
  if (retryAfterMs !== undefined) out.retryAfterMs = retryAfterMs;
  if (code !== undefined) out.code = String(code);
  return out;
}

function checkIndex(index: unknown, length: number, sinkName: string): number {
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= length) {
    throw new Error(`sink "${sinkName}" reported a failure with an invalid index (${String(index)})`);
  }
  return index;
}

/** The longest wait the server asked for among `failures` (and the whole result), if any. */
export function retryAfterOf(failures: Failure[], whole: number | undefined): number | undefined {
  let wait = whole;
  for (const { retryAfterMs } of failures) {
    if (retryAfterMs !== undefined && (wait === undefined || retryAfterMs > wait)) wait = retryAfterMs;
  }
  return wait;
}

/** The log line of a write that failed in whole or part. */
export function failureSummary(failures: Failure[], total: number): string {
  const first = failures[0];
  const text = first.code !== undefined && !first.message.includes(first.code) ? `${first.message} (${first.code})` : first.message;
  return failures.length === total ? text : `${failures.length} of ${total} items failed: ${text}`;
}

/** Tells the watchers of a write's entries that went through. */
export function watchDelivered(entries: readonly Entry[], failures: readonly Failure[]): void {
  const failed = failures.length === 0 ? undefined : new Set(failures.map((failure) => failure.entry));
  for (const entry of entries) if (!failed?.has(entry)) itemWatch.settled(entry.item, 'delivered');
}

/** Keeps each failed entry's first error (its dead letter shows the first and the last). */
export function noteFirstErrors(failures: readonly Failure[]): void {
  const at = Date.now();
  for (const { entry, message, code } of failures) entry.firstError ??= code === undefined ? { message, at } : { message, code, at };
}

/** The dead letters of `failures` for `sink`, stamped `at`: the last error and its code, and the first one when it failed more than once. */
export function lettersOf(failures: readonly Failure[], sink: string, reason: DeadLetterReason, at: number): DeadLetter[] {
  return failures.map(({ entry, message, code }) => {
    const letter: DeadLetter = { item: entry.item, sink, reason, error: message, attempts: entry.attempts, at };
    if (code !== undefined) letter.code = code;
    if (entry.firstError && entry.attempts > 1) letter.firstError = entry.firstError;
    return letter;
  });
}
