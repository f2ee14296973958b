import { randomUUID } from 'node:crypto';

/** A new item id, in the one format every item, spool record and dead letter uses: `dw-<uuid v4>`. */
export function newItemId(): string {
  return `dw-${randomUUID()}`;
}
