import type { DeadLetter, DeadLetterError } from '../../core/dead-letter.interface';
import type { DeadLetterRecord } from '../../core/dead-letter-store.interface';

/** What a record keeps of an earlier life when its item was redriven and dead-lettered again. */
export interface RecordHistory {
  firstError?: DeadLetterError;
  firstAt: number;
  redrives: number;
}

/** A record's id: one per item and sink. */
export function recordId(itemId: string | undefined, sink: string): string {
  return `${itemId ?? 'unknown'}:${sink}`;
}

/** The store's record of a dead letter (with the history of its earlier lives, after a redrive). */
export function recordOf(letter: DeadLetter, history?: RecordHistory): DeadLetterRecord {
  const lastError: DeadLetterError | undefined =
    letter.error === undefined ? undefined : { message: letter.error, ...(letter.code !== undefined ? { code: letter.code } : {}), at: letter.at };
  return {
    ...letter,
    id: recordId(letter.item.id, letter.sink),
    firstError: history?.firstError ?? letter.firstError ?? lastError,
    lastError,
    firstAt: history?.firstAt ?? letter.at,
    redrives: history?.redrives ?? 0,
  };
}

/** A record as JSON (a callback's function is left out: it cannot be kept). */
export function serializeRecord(record: DeadLetterRecord): string {
  return JSON.stringify(record);
}

/** Bytes a record takes as JSON (what a store's `maxBytes` bounds). */
export function recordBytes(record: DeadLetterRecord): number {
  return Buffer.byteLength(serializeRecord(record), 'utf8');
}
