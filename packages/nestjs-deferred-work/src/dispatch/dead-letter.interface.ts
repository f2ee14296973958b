import type { DeferredItem } from '../items/deferred-item.interface';

/** Why an accepted item was given up on. */
export type DeadLetterReason = 'attempts-exhausted' | 'not-retryable' | 'shutdown';

/** An item the dispatcher could not deliver. */
export interface DeadLetter {
  item: DeferredItem;
  /** The sink it was meant for. */
  sink: string;
  reason: DeadLetterReason;
  /** The last error's message, if there was one. */
  error?: string;
  /** Tries made. */
  attempts: number;
  /** Epoch ms when it was dead-lettered. */
  at: number;
}

/** Receives dead letters; may be async. Errors it throws are caught and logged. */
export type DeadLetterHandler = (letters: DeadLetter[]) => void | Promise<void>;
