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

/**
 * A batch mark: "a write began with the record `seq` and held the `count` pending records from it".
 * Two entries written together, told from acks by the top bits of their high word (a seq stays below
 * 2^53, so an ack's high word never has them): `[seq | START]`, then `[count | COUNT]`. A reader that
 * does not know marks takes them for acks of seqs that do not exist, and ignores them.
 */
const MARK_START = 0x80000000;
const MARK_COUNT = 0xc0000000;
const FLAGS = 0xc0000000;

function entry(buf: Buffer, at: number, value: number, flags: number): void {
  buf.writeUInt32LE(value % TWO_32, at);
  buf.writeUInt32LE((Math.floor(value / TWO_32) | flags) >>> 0, at + 4);
  buf.writeUInt32LE(crc32(buf, at, at + 8), at + 8);
}

/** The two entries marking a batch of `count` records from `seq` (one write). */
export function encodeMark(seq: number, count: number): Buffer {
  const buf = Buffer.allocUnsafe(2 * ACK_ENTRY_BYTES);
  entry(buf, 0, seq, MARK_START);
  entry(buf, ACK_ENTRY_BYTES, count, MARK_COUNT);
  return buf;
}

/** An `.acks` file's valid entries: the acked seqs, and the batch marks (seq to count, the last one for a seq wins). */
export function decodeAckFile(buf: Buffer): { acks: number[]; marks: Map<number, number> } {
  const acks: number[] = [];
  const marks = new Map<number, number>();
  let start: number | undefined;
  for (let at = 0; at + ACK_ENTRY_BYTES <= buf.length; at += ACK_ENTRY_BYTES) {
    const valid = crc32(buf, at, at + 8) === buf.readUInt32LE(at + 8);
    const high = buf.readUInt32LE(at + 4);
    const value = buf.readUInt32LE(at) + (high & ~FLAGS) * TWO_32;
    const flags = (high & FLAGS) >>> 0;
    if (valid && flags === MARK_COUNT && start !== undefined) marks.set(start, value);
    start = valid && flags === MARK_START ? value : undefined;
    if (valid && flags === 0) acks.push(value);
  }
  return { acks, marks };
}

/** The seqs of an `.acks` file's valid entries. */
export function decodeAcks(buf: Buffer): number[] {
  return decodeAckFile(buf).acks;
}
