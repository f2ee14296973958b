import type { DeadLetterError } from '../../core/dead-letter.interface';
import type { DeferredItem } from '../../core/items/deferred-item.interface';

/** An accepted item as a processor holds it. */
export interface Entry {
  item: DeferredItem;
  attempts: number;
  /** Acceptance order; `flush()` waits for every entry accepted before it was called. With a spool, its record's seq. */
  seq: number;
  /** Its record's seq in the sink's spool, when the sink has one (acked once the entry settles). */
  spoolSeq?: number;
  /**
   * With a spool: the size of the last write that began with this entry, as marked in the spool (by
   * this process, or by a previous one for a replayed item: the next batch is then formed of the same
   * items, so a receiver sees the same batch, and the same Idempotency-Key, again).
   */
  marked?: number;
  /** The first failure of its writes (kept on its dead letter). */
  firstError?: DeadLetterError;
  /** When it was accepted (`performance.now()`), only while a write observer is set: for the delivery lag. */
  acceptedAt?: number;
  /** Its estimated size (payload + fields) in bytes: what the byte budgets count while it is held in memory. */
  bytes: number;
  /** Set while its `bytes` are counted as held in memory (queued, in flight or waiting for a retry). */
  counted?: boolean;
  /**
   * When its retry budget (`maxRetryDurationMs`) began (epoch ms): set at its first transient failure,
   * to that moment — or, when the sink was already down, to when it went down or the entry was
   * accepted (`since`), whichever is later: waiting behind a failing write counts.
   */
  retryFrom?: number;
  /** When it was accepted, for an entry whose item was made long before (a redrive, a spool replay; epoch ms). Else its item's `createdAt`. */
  since?: number;
}

/** One entry of a write that did not go through. */
export interface Failure {
  entry: Entry;
  retryable: boolean;
  message: string;
  /** The server asked to wait this long before the entry's next try. */
  retryAfterMs?: number;
  /** The server's code for the failure, kept on the dead letter. */
  code?: string;
}
