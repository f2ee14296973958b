import type { DeferredItem } from './deferred-item.interface';
import { quickSizeBound, validateItem } from './item-validator';

const utf8 = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '');

describe('quickSizeBound', () => {
  it.each([
    ['a small order', { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3 }],
    ['nested arrays and nulls', { a: [1, 'two', null, [true, false]], b: { c: { d: 'é€😀' } } }],
    ['escapes', { text: '"\\\n\u0001</script>' }],
    ['omitted values', { f: () => 1, u: undefined, s: Symbol('x'), n: Number.NaN, i: Number.POSITIVE_INFINITY }],
    ['big numbers', [Number.MAX_VALUE, -Number.MIN_VALUE, 1e21, -123456789.123456789]],
  ])('is never below the real UTF-8 size of JSON.stringify (%s)', (_what, value) => {
    const bound = quickSizeBound(value);
    expect(bound).toBeGreaterThanOrEqual(utf8(value));
  });

  it.each([
    ['a BigInt', { n: 1n }],
    ['a Date (toJSON)', { at: new Date(0) }],
    ['a cycle', (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()],
    ['too many nodes', Array.from({ length: 100 }, (_, i) => i)],
    ['a throwing getter', Object.defineProperty({}, 'x', { enumerable: true, get: () => { throw new Error('no'); } })],
  ])('leaves %s to JSON.stringify', (_what, value) => {
    expect(quickSizeBound(value)).toBe(-1);
  });

  it('keeps its node budget when a getter walks another payload meanwhile (a getter that defers an item)', () => {
    let inner = Number.NaN;
    const value = {
      get g() {
        inner = quickSizeBound(Array.from({ length: 50 }, () => 1));
        return 1;
      },
      a: Array.from({ length: 40 }, () => 1),
    };
    expect(quickSizeBound(value)).toBeGreaterThanOrEqual(utf8(value));
    expect(inner).toBeGreaterThan(0);
  });
});

describe('validateItem', () => {
  const job = (data: unknown): DeferredItem => ({ kind: 'job', queue: 'q', name: 'n', data, when: 'always', createdAt: 0 });

  it('accepts small payloads and rejects what the exact size shows is too large', () => {
    expect(() => validateItem(job({ orderId: 1 }), 100)).not.toThrow();
    expect(() => validateItem(job({ s: 'x'.repeat(95) }), 100)).toThrow(/payload is 103 bytes, over maxItemBytes \(100\)/);
    // A bound over half the limit falls back to the exact size, which fits.
    expect(() => validateItem(job({ s: 'x'.repeat(20) }), 100)).not.toThrow();
  });

  it('still names the exact problem for payloads the quick walk leaves alone', () => {
    expect(() => validateItem(job({ n: 1n }), 1000)).toThrow(/BigInt/);
    const o: Record<string, unknown> = {};
    o.self = o;
    expect(() => validateItem(job(o), 1000)).toThrow(/circular/i);
  });
});
