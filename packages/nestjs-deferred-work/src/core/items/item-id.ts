import { randomBytes } from 'node:crypto';

/**
 * Item ids are UUID v4 strings behind `dw-`: 74 random bits chosen once per process (and again after
 * 2^48 ids), then a counter in the last 12 hex digits. Unique within a process by construction and
 * across processes as surely as random UUIDs are for this volume, at a fraction of the cost of a
 * `randomUUID()` per item (the id is made on the request path, for every accepted item).
 */
let prefix = '';
let next = 0;
const COUNTER_LIMIT = 2 ** 48;
/** The last 3 hex digits of an id, by the counter's low 12 bits: one string concatenation per id. */
const LOW = Array.from({ length: 4096 }, (_, i) => i.toString(16).padStart(3, '0'));
/** `prefix` and the counter's other 9 hex digits, recomputed every 4,096 ids. */
let block = '';

function newPrefix(): string {
  const hex = randomBytes(10).toString('hex'); // 20 hex digits, 18 of them used
  const variant = ((parseInt(hex[12], 16) & 0x3) | 0x8).toString(16); // RFC 4122 variant: 8, 9, a or b
  return `dw-${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(16, 19)}-`;
}

/** A new item id, in the one format every item, spool record and dead letter uses: `dw-<uuid v4>`. */
export function newItemId(): string {
  if (next === 0 || next >= COUNTER_LIMIT) {
    prefix = newPrefix();
    next = 0;
  }
  const n = next++;
  const low = n & 0xfff; // the low 12 bits (ToInt32 keeps them for any counter below 2^48)
  if (low === 0) block = prefix + Math.floor(n / 4096).toString(16).padStart(9, '0');
  return block + LOW[low];
}
