import { SinkConfigError } from '../kit/sink-config.error';
import { checkPlainData } from './plain-data';

describe('checkPlainData', () => {
  const check = (value: unknown) => () => checkPlainData('OffloadedSink "x"', 'options', value);

  it('accepts what structured clone copies faithfully, cycles included', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    for (const value of [undefined, null, 1, 'a', true, [1, { b: [2] }], { d: new Date(), r: /x/, m: new Map([['k', { v: 1 }]]), s: new Set([1]) }, Buffer.from('x'), cyclic]) {
      expect(check(value)).not.toThrow();
    }
  });

  it('refuses functions and symbols wherever they are, naming the path', () => {
    expect(check({ redis: { retryStrategy: () => 50 } })).toThrow(/options\.redis\.retryStrategy is a function, which cannot be passed to a worker thread/);
    expect(check({ list: [1, Symbol('s')] })).toThrow(/options\.list\.1 is a symbol/);
    expect(check(new Map([['k', () => 1]]))).toThrow(/options\.k is a function/);
  });

  it('refuses class instances, which would arrive without their methods, with what to pass instead', () => {
    class Queue {}
    expect(check({ queue: new Queue() })).toThrow(SinkConfigError);
    expect(check({ queue: new Queue() })).toThrow(/options\.queue is an instance of Queue.*Pass connection options instead/);
    expect(check({ url: new URL('http://x') })).toThrow(/options\.url is an instance of URL/);
  });
});
