import { randomUUID } from 'node:crypto';

/** A UUID v4's first 24 characters (`xxxxxxxx-xxxx-4xxx-yxxx-`), chosen once per process. */
const prefix = `dw-${randomUUID().slice(0, 24)}`;
let next = 0;

/**
 * An id for a record the awaited routes write themselves (a table row, a stream entry), made the way
 * the library makes its item ids: a prefix chosen once per process, then a counter in the last 12 hex
 * digits. Ordered like the deferred route's ids: each route's rows follow one another in a table's
 * primary key (their inserts go to one place in the index, as the sink's do), not all over it.
 */
export function nextRecordId(): string {
  return prefix + (next++).toString(16).padStart(12, '0');
}
