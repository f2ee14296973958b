/**
 * CRC-32 (IEEE 802.3, the polynomial of zip, PNG and `zlib.crc32`), table-driven. Node 20 has no
 * `zlib.crc32` (Node 22+), and a checksum here must be cheap enough to run on every appended record.
 */
const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * The CRC-32 of `bytes[start, end)`, continuing from `previous` (the CRC of what came before, 0 to
 * start). `crc32(b) === crc32(b, k, b.length, crc32(b, 0, k))` for any split `k`.
 */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length, previous = 0): number {
  let crc = ~previous;
  for (let i = start; i < end; i++) crc = TABLE[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}
