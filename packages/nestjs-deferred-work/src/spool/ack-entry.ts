import { crc32 } from './crc32';

/**
 * The on-disk form of an ack, in a segment's `.acks` file (`segment-<first seq>.acks`), entries back
 * to back, little-endian: `[seq u64][crc32 u32 of those 8 bytes]`, 12 bytes each. An entry cut short
 * or failing its checksum is ignored: its record is replayed again (at least once, never lost).
 */
export const ACK_ENTRY_BYTES = 12;

const TWO_32 = 2 ** 32;

/** The entries acking `seqs`, in one buffer (one write). */
export function encodeAcks(seqs: readonly number[]): Buffer {
  const buf = Buffer.allocUnsafe(seqs.length * ACK_ENTRY_BYTES);
  seqs.forEach((seq, i) => {
    const at = i * ACK_ENTRY_BYTES;
    buf.writeUInt32LE(seq % TWO_32, at);
    buf.writeUInt32LE(Math.floor(seq / TWO_32), at + 4);
    buf.writeUInt32LE(crc32(buf, at, at + 8), at + 8);
  });
  return buf;
}

/** The seqs of an `.acks` file's valid entries. */
export function decodeAcks(buf: Buffer): number[] {
  const seqs: number[] = [];
  for (let at = 0; at + ACK_ENTRY_BYTES <= buf.length; at += ACK_ENTRY_BYTES) {
    if (crc32(buf, at, at + 8) !== buf.readUInt32LE(at + 8)) continue;
    seqs.push(buf.readUInt32LE(at) + buf.readUInt32LE(at + 4) * TWO_32);
  }
  return seqs;
}
