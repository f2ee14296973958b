import { crc32 } from './crc32';

/**
 * The on-disk form of one spooled record, in a segment file (`segment-<first seq>.log`), frames
 * back to back, all integers little-endian:
 *
 * ```
 * offset  size  field
 *      0     4  length     payload bytes (u32)
 *      4     4  crc32      CRC-32 of bytes 0..3 (length) and 8..(24 + length) (seq, time, payload)
 *      8     8  seq        the record's sequence number (u64; unique and increasing in a spool)
 *     16     8  timestamp  when it was appended, epoch milliseconds (u64)
 *     24     n  payload
 * ```
 *
 * A frame is valid only when it is complete and its checksum matches; anything else is a torn
 * record (a write cut short by a crash, a flipped bit) and is never handed out as data.
 */
export const FRAME_HEADER_BYTES = 24;

/** Largest payload a frame may declare (1 GiB); a larger length is read as garbage. */
export const MAX_PAYLOAD_BYTES = 1 << 30;

const TWO_32 = 2 ** 32;

/** One valid frame found in a buffer. */
export interface FrameView {
  readonly seq: number;
  /** Epoch milliseconds when the record was appended. */
  readonly timestamp: number;
  /** Offset of the frame's first byte. */
  readonly offset: number;
  /** The frame's size in bytes, header included. */
  readonly size: number;
}

/** What `scanFrames` found in a segment's bytes. */
export interface FrameScan {
  /** The valid frames, in file order (their seqs increase). */
  readonly frames: FrameView[];
  /** Frames that were cut short or failed their checksum (a torn tail counts once). */
  readonly torn: number;
  /** Bytes up to the end of the last frame worth keeping: where the file should be truncated. */
  readonly goodLength: number;
}

function writeU64(buf: Buffer, value: number, offset: number): void {
  buf.writeUInt32LE(value % TWO_32, offset);
  buf.writeUInt32LE(Math.floor(value / TWO_32), offset + 4);
}

function readU64(buf: Buffer, offset: number): number {
  return buf.readUInt32LE(offset) + buf.readUInt32LE(offset + 4) * TWO_32;
}

function frameCrc(buf: Buffer, offset: number, length: number): number {
  const partial = crc32(buf, offset, offset + 4);
  return crc32(buf, offset + 8, offset + FRAME_HEADER_BYTES + length, partial);
}

/**
 * The frame of one record. A string payload is encoded (UTF-8) straight into the frame, with no copy
 * in between; `byteLength` is its UTF-8 size when the caller already knows it.
 */
export function encodeFrame(seq: number, timestamp: number, payload: Buffer | string, byteLength?: number): Buffer {
  const length = byteLength ?? (typeof payload === 'string' ? Buffer.byteLength(payload, 'utf8') : payload.length);
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  frame.writeUInt32LE(length, 0);
  writeU64(frame, seq, 8);
  writeU64(frame, timestamp, 16);
  if (typeof payload === 'string') frame.write(payload, FRAME_HEADER_BYTES, length, 'utf8');
  else payload.copy(frame, FRAME_HEADER_BYTES);
  frame.writeUInt32LE(frameCrc(frame, 0, length), 4);
  return frame;
}

/** The payload of a frame found by `scanFrames` (a copy, safe to keep). */
export function framePayload(buf: Buffer, frame: FrameView): Buffer {
  return Buffer.from(buf.subarray(frame.offset + FRAME_HEADER_BYTES, frame.offset + frame.size));
}

/** The frame at `offset` when it is complete, checksummed and its seq follows `afterSeq`; else why not. */
function readFrame(buf: Buffer, offset: number, afterSeq: number): FrameView | 'short' | 'bad' {
  if (buf.length - offset < FRAME_HEADER_BYTES) return 'short';
  const length = buf.readUInt32LE(offset);
  if (length > MAX_PAYLOAD_BYTES || offset + FRAME_HEADER_BYTES + length > buf.length) return 'short';
  if (frameCrc(buf, offset, length) !== buf.readUInt32LE(offset + 4)) return 'bad';
  const seq = readU64(buf, offset + 8);
  if (seq <= afterSeq) return 'bad';
  return { seq, timestamp: readU64(buf, offset + 16), offset, size: FRAME_HEADER_BYTES + length };
}

/**
 * Every valid frame of a segment's bytes. A bad frame in the middle (complete, wrong checksum) is
 * skipped and counted when the frame after it is valid, so one flipped bit costs one record; anything
 * else that is not a valid frame ends the scan as a torn tail (counted once, `goodLength` before it).
 */
export function scanFrames(buf: Buffer): FrameScan {
  const frames: FrameView[] = [];
  let torn = 0;
  let offset = 0;
  let lastSeq = 0;
  let goodLength = 0;
  while (offset < buf.length) {
    const frame = readFrame(buf, offset, lastSeq);
    if (typeof frame === 'object') {
      frames.push(frame);
      lastSeq = frame.seq;
      offset += frame.size;
      goodLength = offset;
      continue;
    }
    torn++;
    if (frame === 'bad') {
      const next = offset + FRAME_HEADER_BYTES + buf.readUInt32LE(offset);
      if (next < buf.length && typeof readFrame(buf, next, lastSeq) === 'object') {
        offset = next;
        continue;
      }
    }
    break;
  }
  return { frames, torn, goodLength };
}
