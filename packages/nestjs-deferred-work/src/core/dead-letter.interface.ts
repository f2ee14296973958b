import type { DeferredItem } from './items/deferred-item.interface';

/**
 * Why an accepted item was given up on.
 * - `expired`: its transient failures were retried for `maxRetryDurationMs` (default 5 minutes) without success.
 * - `attempts-exhausted`: it used up `maxAttempts` tries (only when that cap is set; in testing's inline mode, its one try).
 * - `not-retryable`: the sink said retrying cannot help (e.g. the item was refused as invalid).
 * - `shutdown`: shutdown's deadline passed before it was delivered; it was not in a write then (never sent, or refused).
 * - `shutdown-in-flight`: shutdown's deadline passed while a write of it was in flight: it may have been delivered
 *   (a redrive may then deliver it twice; consumers dedupe by the item's `id`).
 * - `closed`: it was deferred after shutdown had finished; nothing runs any more.
 * - `timeout`: a `run(fn)` callback ran past its `timeoutMs` (its signal was aborted; it may go on running).
 */
export type DeadLetterReason = 'expired' | 'attempts-exhausted' | 'not-retryable' | 'shutdown' | 'shutdown-in-flight' | 'closed' | 'timeout';

/** One error of a dead letter's history: its message, the server's code when the sink gave one, and when (epoch ms). */
export interface DeadLetterError {
  message: string;
  code?: string;
  at: number;
}

/** An item the dispatcher could not deliver. */
export interface DeadLetter {
  item: DeferredItem;
  /** The sink it was meant for. */
  sink: string;
  reason: DeadLetterReason;
  /** The last error's message, if there was one. */
  error?: string;
  /** The server's code for the last error (SQLSTATE, errno, Redis reply prefix, AWS code), when the sink gave one. */
  code?: string;
  /** The first error the item met, when it failed more than once (the last one is `error` and `code`). */
  firstError?: DeadLetterError;
  /** Tries made. */
  attempts: number;
  /** Epoch ms when it was dead-lettered. */
  at: number;
}

/** Receives dead letters; may be async. Errors it throws are caught and logged. */
export type DeadLetterHandler = (letters: DeadLetter[]) => void | Promise<void>;
