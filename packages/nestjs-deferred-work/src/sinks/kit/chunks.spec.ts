import { chunk } from './chunks';

describe('chunk', () => {
  it('splits in order by count and by bytes, and sets apart an entry too large to send at all', () => {
    const sizes = [4, 4, 4, 12, 4, 9, 1];
    const { chunks, tooLarge } = chunk(sizes, { maxCount: 2, maxBytes: 10 }, (size) => size);
    expect(chunks.map((c) => c.positions)).toEqual([[0, 1], [2, 4], [5, 6]]);
    expect(chunks.map((c) => c.bytes)).toEqual([8, 8, 10]);
    expect(tooLarge).toEqual([3]);
  });

  it('with no limits, one chunk of everything (and none for nothing)', () => {
    expect(chunk(['a', 'b', 'c'], {}).chunks.map((c) => c.values)).toEqual([['a', 'b', 'c']]);
    expect(chunk([], { maxCount: 10 }).chunks).toEqual([]);
  });

  it('SQS-like: 25 entries at 10 a call give 10, 10, 5', () => {
    const { chunks } = chunk(Array.from({ length: 25 }, (_, i) => i), { maxCount: 10 });
    expect(chunks.map((c) => c.values.length)).toEqual([10, 10, 5]);
  });
});
