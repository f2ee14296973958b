import { crc32 as zlibCrc32 } from 'node:zlib';

/**
 * The CRC-32 (IEEE 802.3 / ISO-HDLC, the polynomial of zip and PNG) of `bytes[start, end)`,
 * continuing from `previous` (the CRC of what came before, 0 to start):
 * `crc32(b) === crc32(b, k, b.length, crc32(b, 0, k))` for any split `k`. Node's zlib does the work
 * on a view of the range, not a copy.
 */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length, previous = 0): number {
  // zlib answers 0 for an empty buffer without backing memory; the CRC of nothing is `previous`
  if (end <= start) return previous >>> 0;
  return zlibCrc32(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end), previous >>> 0);
}
