import { jest } from '@jest/globals';
import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink } from '../../core/sink.interface';
import { resolveOptions } from '../../nest/options/resolve-options';
import { Dispatcher } from '../../pipeline/dispatcher';
import { MemorySink } from './memory.sink';

const metric = (n: number): SinkItem => ({ kind: 'metric', name: `m${n}`, value: n, when: 'always', createdAt: 0 });
const values = (items: readonly SinkItem[]) => items.map((item) => (item as { value: number }).value);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
/** One turn of the event loop: what `waitFor` waits before it resolves. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Whether `promise` has settled, without waiting for it. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

describe('MemorySink', () => {
  describe('options', () => {
    it("is named 'memory' unless told otherwise", () => {
      expect(new MemorySink().name).toBe('memory');
      expect(new MemorySink({ name: 'audit' }).name).toBe('audit');
    });

    it('refuses a capacity that is not a whole number >= 0', () => {
      for (const capacity of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(() => new MemorySink({ capacity })).toThrow(/capacity must be a whole number >= 0/);
      }
      expect(() => new MemorySink({ capacity: 0 })).not.toThrow();
    });

    it('takes every kind: it declares none, and a dispatcher routes jobs, logs and metrics to it', async () => {
      const sink = new MemorySink();
      expect((sink as DeferredSink).kinds).toBeUndefined();
      const dispatcher = new Dispatcher(resolveOptions({ sinks: [sink] }));
      dispatcher.dispatch({ kind: 'job', queue: 'mail', name: 'welcome', data: {}, when: 'always', createdAt: Date.now() });
      dispatcher.dispatch({ kind: 'log', level: 'info', message: 'hi', when: 'always', createdAt: Date.now() });
      dispatcher.dispatch(metric(1));
      expect(await dispatcher.flush(1000)).toBe(true);
      await dispatcher.shutdown();
      expect(dispatcher.stats()).toMatchObject({ accepted: 3, delivered: 3, rejected: 0 });
      expect(sink.items.map((item) => item.kind).sort()).toEqual(['job', 'log', 'metric']);
    });
  });

  describe('items', () => {
    it('keeps what was delivered, oldest first, across batches', async () => {
      const sink = new MemorySink();
      await sink.write([metric(1), metric(2)]);
      await sink.write([metric(3)]);
      expect(values(sink.items)).toEqual([1, 2, 3]);
      expect(sink.delivered).toBe(3);
    });

    it('keeps only the last `capacity` items, while `delivered` keeps counting', async () => {
      const sink = new MemorySink({ capacity: 3 });
      for (let i = 1; i <= 5; i++) await sink.write([metric(i)]);
      expect(values(sink.items)).toEqual([3, 4, 5]);
      await sink.write([metric(6), metric(7), metric(8), metric(9)]);
      expect(values(sink.items)).toEqual([7, 8, 9]);
      expect(sink.delivered).toBe(9);
    });

    it('trims when it holds twice the capacity, not on every write (amortised)', async () => {
      const sink = new MemorySink({ capacity: 4 });
      const held = () => (sink as unknown as { kept: SinkItem[] }).kept.length;
      for (let i = 1; i <= 8; i++) await sink.write([metric(i)]);
      expect(held()).toBe(8); // up to 2 × capacity: nothing copied yet
      await sink.write([metric(9)]);
      expect(held()).toBe(4); // past it: back to capacity, the newest kept
      expect(values(sink.items)).toEqual([6, 7, 8, 9]);
      // Reading `items` in between trims too, so it never shows more than `capacity`.
      for (let i = 10; i <= 11; i++) await sink.write([metric(i)]);
      expect(held()).toBe(6);
      expect(values(sink.items)).toEqual([8, 9, 10, 11]);
      expect(held()).toBe(4);
    });

    it('keeps nothing with capacity 0, but counts', async () => {
      const sink = new MemorySink({ capacity: 0 });
      await sink.write([metric(1), metric(2)]);
      expect(sink.items).toEqual([]);
      expect(sink.delivered).toBe(2);
    });

    it('filters by kind with ofKind()', async () => {
      const sink = new MemorySink();
      await sink.write([metric(1), { kind: 'log', level: 'warn', message: 'w', when: 'always', createdAt: 0 }, metric(2)]);
      expect(values(sink.ofKind('metric'))).toEqual([1, 2]);
      expect(sink.ofKind('log').map((log) => log.message)).toEqual(['w']);
      expect(sink.ofKind('job')).toEqual([]);
    });
  });

  describe('batchSizes', () => {
    it('lists the size of each write, in order', async () => {
      const sink = new MemorySink();
      await sink.write([metric(1), metric(2), metric(3)]);
      await sink.write([metric(4)]);
      await sink.write([]);
      expect(sink.batchSizes).toEqual([3, 1, 0]);
    });

    it('keeps the last 1000', async () => {
      const sink = new MemorySink();
      for (let i = 1; i <= 1500; i++) await sink.write(new Array<SinkItem>(i % 7).fill(metric(i)));
      expect(sink.batchSizes).toEqual(range(501, 1501).map((i) => i % 7));
      for (let i = 1501; i <= 2600; i++) await sink.write(new Array<SinkItem>(i % 7).fill(metric(i)));
      expect(sink.batchSizes).toEqual(range(1601, 2601).map((i) => i % 7));
    });
  });

  describe('waitFor()', () => {
    it('resolves at once when enough items were delivered already', async () => {
      const sink = new MemorySink();
      await sink.write([metric(1), metric(2)]);
      expect(await settled(sink.waitFor(2))).toBe(true);
      expect(await settled(sink.waitFor(0))).toBe(true);
    });

    it('resolves on the turn after the write that reaches the count, not before', async () => {
      const sink = new MemorySink();
      const waiting = sink.waitFor(3);
      await sink.write([metric(1), metric(2)]);
      await nextTurn();
      expect(await settled(waiting)).toBe(false);
      await sink.write([metric(3)]);
      expect(await settled(waiting)).toBe(false); // released on the next turn, once the write is counted
      await nextTurn();
      expect(await settled(waiting)).toBe(true);
    });

    it('resolves each waiter at its own count', async () => {
      const sink = new MemorySink();
      const two = sink.waitFor(2);
      const four = sink.waitFor(4);
      await sink.write([metric(1), metric(2), metric(3)]);
      await nextTurn();
      expect(await settled(two)).toBe(true);
      expect(await settled(four)).toBe(false);
      await sink.write([metric(4)]);
      await nextTurn();
      expect(await settled(four)).toBe(true);
    });

    it('rejects after its timeout with what was delivered, and stops waiting', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
      try {
        const sink = new MemorySink({ name: 'audit' });
        await sink.write([metric(1)]);
        const waiting = sink.waitFor(3, 50);
        const outcome = waiting.then(
          () => 'resolved',
          (error: Error) => error.message,
        );
        await jest.advanceTimersByTimeAsync(49);
        expect(await settled(outcome)).toBe(false);
        await jest.advanceTimersByTimeAsync(1);
        expect(await outcome).toBe('MemorySink "audit": 1 of 3 items delivered after 50 ms.');
        expect(jest.getTimerCount()).toBe(0);
        // The timed-out waiter is gone: reaching the count later schedules nothing for it.
        await sink.write([metric(2), metric(3)]);
        expect(jest.getTimerCount()).toBe(0);
      } finally {
        jest.useRealTimers();
      }
    });

    it('waits 5 s by default, and clears its timer once resolved', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
      try {
        const sink = new MemorySink();
        const late = sink.waitFor(1).catch((error: Error) => error.message);
        await jest.advanceTimersByTimeAsync(4999);
        expect(await settled(late)).toBe(false);
        await jest.advanceTimersByTimeAsync(1);
        expect(await late).toMatch(/0 of 1 items delivered after 5000 ms/);

        const onTime = sink.waitFor(1);
        await sink.write([metric(1)]);
        await jest.advanceTimersByTimeAsync(0); // the release on the next turn
        await expect(onTime).resolves.toBeUndefined();
        expect(jest.getTimerCount()).toBe(0); // its 5 s timeout was cleared
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('clear()', () => {
    it('forgets items, batch sizes and the count', async () => {
      const sink = new MemorySink();
      await sink.write([metric(1), metric(2)]);
      sink.clear();
      expect(sink.items).toEqual([]);
      expect(sink.batchSizes).toEqual([]);
      expect(sink.delivered).toBe(0);
      await sink.write([metric(3)]);
      expect(values(sink.items)).toEqual([3]);
      expect(sink.batchSizes).toEqual([1]);
    });

    it('makes waitFor count from the clear, and leaves pending waiters waiting', async () => {
      const sink = new MemorySink();
      await sink.write([metric(1), metric(2)]);
      const pending = sink.waitFor(3);
      sink.clear();
      await sink.write([metric(3)]); // the third item in all, the first since clear()
      await nextTurn();
      expect(await settled(pending)).toBe(false);
      await sink.write([metric(4), metric(5)]);
      await nextTurn();
      expect(await settled(pending)).toBe(true);
      expect(await settled(sink.waitFor(2))).toBe(true);
    });
  });
});
