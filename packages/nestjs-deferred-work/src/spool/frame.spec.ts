import { decodeAcks, encodeAcks } from './ack-entry';
import { crc32 } from './crc32';
import { encodeFrame, FRAME_HEADER_BYTES, framePayload, scanFrames } from './frame';

describe('crc32', () => {
  it('is the IEEE CRC-32 (the check value of "123456789"), continues across splits and reads ranges', () => {
    const bytes = Buffer.from('123456789');
    expect(crc32(bytes)).toBe(0xcbf43926);
    expect(crc32(bytes, 4, 9, crc32(bytes, 0, 4))).toBe(0xcbf43926);
    expect(crc32(Buffer.alloc(0))).toBe(0);
    expect(crc32(Buffer.alloc(0), 0, 0, 0x1234)).toBe(0x1234);
    expect(crc32(new Uint8Array(bytes), 2, 7)).toBe(crc32(Buffer.from('34567')));
  });

  it('a flipped bit anywhere changes the checksum', () => {
    const bytes = Buffer.from('deferred work, after the response');
    const sum = crc32(bytes);
    for (let i = 0; i < bytes.length; i++) {
      const flipped = Buffer.from(bytes);
      flipped[i]! ^= 1 << (i % 8);
      expect(crc32(flipped)).not.toBe(sum);
    }
  });
});

describe('on-disk format', () => {
  // bytes written by an earlier release: a spool on disk must stay readable, byte for byte
  const frameHex = '080000001c7528c407000000000100007b68e5cf8b0100006465666572726564';
  const acksHex = '0100000000000000f7df88a90000000002000000e2172bcf';

  it('a frame written before reads back, and is encoded to the same bytes', () => {
    const written = Buffer.from(frameHex, 'hex');
    const scan = scanFrames(written);
    expect(scan).toMatchObject({ torn: 0, goodLength: written.length });
    expect(scan.frames.map((f) => [f.seq, f.timestamp, framePayload(written, f).toString()])).toEqual([
      [2 ** 40 + 7, 1_700_000_000_123, 'deferred'],
    ]);
    expect(encodeFrame(2 ** 40 + 7, 1_700_000_000_123, Buffer.from('deferred')).toString('hex')).toBe(frameHex);
  });

  it('ack entries written before decode, and are encoded to the same bytes', () => {
    expect(decodeAcks(Buffer.from(acksHex, 'hex'))).toEqual([1, 2 ** 33]);
    expect(encodeAcks([1, 2 ** 33]).toString('hex')).toBe(acksHex);
  });
});

describe('frames', () => {
  const frames = (n: number, from = 1) =>
    Buffer.concat(Array.from({ length: n }, (_, i) => encodeFrame(from + i, 1_700_000_000_000 + i, Buffer.from(`payload ${from + i}`))));

  it('round-trips seq, timestamp and payload (seqs past 2^32 too)', () => {
    const big = 2 ** 40 + 7;
    const buf = Buffer.concat([frames(2), encodeFrame(big, 1_700_000_000_123, Buffer.from('big'))]);
    const scan = scanFrames(buf);
    expect(scan.torn).toBe(0);
    expect(scan.goodLength).toBe(buf.length);
    expect(scan.frames.map((f) => [f.seq, f.timestamp, framePayload(buf, f).toString()])).toEqual([
      [1, 1_700_000_000_000, 'payload 1'],
      [2, 1_700_000_000_001, 'payload 2'],
      [big, 1_700_000_000_123, 'big'],
    ]);
  });

  it('a frame cut short anywhere is a torn tail: counted once, the frames before it kept', () => {
    const buf = frames(3);
    const lastStart = scanFrames(buf).frames[2]!.offset;
    for (let cut = lastStart + 1; cut < buf.length; cut++) {
      const scan = scanFrames(buf.subarray(0, cut));
      expect(scan.frames.map((f) => f.seq)).toEqual([1, 2]);
      expect(scan.torn).toBe(1);
      expect(scan.goodLength).toBe(lastStart);
    }
  });

  it('a flipped byte in a middle frame costs that frame only; in the last frame, it is a torn tail', () => {
    const buf = frames(3);
    const [, second, third] = scanFrames(buf).frames;
    const middle = Buffer.from(buf);
    middle[second!.offset + FRAME_HEADER_BYTES + 2]! ^= 0x01;
    expect(scanFrames(middle)).toMatchObject({ torn: 1, goodLength: buf.length });
    expect(scanFrames(middle).frames.map((f) => f.seq)).toEqual([1, 3]);
    const last = Buffer.from(buf);
    last[third!.offset + 9]! ^= 0x80; // in its seq
    expect(scanFrames(last)).toMatchObject({ torn: 1, goodLength: third!.offset });
  });

  it('zeros (a tail the file system extended but never wrote) and garbage are one torn tail', () => {
    const buf = Buffer.concat([frames(2), Buffer.alloc(4096)]);
    expect(scanFrames(buf)).toMatchObject({ torn: 1, goodLength: buf.length - 4096 });
    const garbage = Buffer.concat([frames(2), Buffer.from('\xff\xff\xff\x7fgarbage that is not a frame at all', 'latin1')]);
    expect(scanFrames(garbage).frames).toHaveLength(2);
    expect(scanFrames(garbage).torn).toBe(1);
  });

  it('ack entries round-trip; a torn or corrupt entry is ignored', () => {
    const acks = encodeAcks([1, 5, 2 ** 33]);
    expect(decodeAcks(acks)).toEqual([1, 5, 2 ** 33]);
    const corrupt = Buffer.from(acks);
    corrupt[13]! ^= 0x04;
    expect(decodeAcks(Buffer.concat([corrupt, encodeAcks([9]).subarray(0, 7)]))).toEqual([1, 2 ** 33]);
  });
});
