import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkWriteContext } from '../../core/sink.interface';
import { AsyncLocalStorage } from 'node:async_hooks';
import { jest } from '@jest/globals';
import { item, later, ok, setup, useFakeClock } from '../../../../../test/support/processor-harness';

/** A write that takes `ms`, and the most writes it found in flight at once (itself included). */
function overlapWatch(ms: number) {
  let inFlight = 0;
  let most = 0;
  const write = async () => {
    inFlight++;
    most = Math.max(most, inFlight);
    await later(ms);
    inFlight--;
  };
  return { write, most: () => most };
}

describe('SinkProcessor', () => {
  beforeEach(() => useFakeClock(true));
  afterEach(() => useFakeClock(false));

  it('batches by size: a full batch goes out without waiting for the linger timer', async () => {
    const { processor, batches, identity } = setup(ok, { maxBatchSize: 3, flushIntervalMs: 60_000 });
    for (let i = 0; i < 7; i++) processor.enqueue(item(i));
    await jest.advanceTimersByTimeAsync(30);
    expect(batches.map((b) => b.length)).toEqual([3, 3]);
    expect(processor.stats().queueDepth).toBe(1); // the remainder lingers for more
    await processor.flush(Date.now() + 1000);
    expect(batches.map((b) => b.length)).toEqual([3, 3, 1]);
    expect(identity()).toMatchObject({ accepted: 7, delivered: 7, pending: 0 });
  });

  it('batches by time: items below a batch go out after flushIntervalMs', async () => {
    const { processor, batches, identity } = setup(ok, { maxBatchSize: 100, flushIntervalMs: 20 });
    processor.enqueue(item(1));
    processor.enqueue(item(2));
    expect(batches).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(80);
    expect(batches.map((b) => b.map((i) => (i as { name: string }).name))).toEqual([['m1', 'm2']]);
    expect(identity().delivered).toBe(2);
  });

  it('keeps one write in flight per sink', async () => {
    const watch = overlapWatch(5);
    const { processor, identity } = setup(watch.write, { maxBatchSize: 2 });
    for (let i = 0; i < 20; i++) processor.enqueue(item(i));
    expect(await processor.flush(Date.now() + 2000)).toBe(true);
    expect(watch.most()).toBe(1);
    expect(identity().delivered).toBe(20);
  });

  it('drops beyond maxQueueSize and counts the drops, keeping the identity', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { processor, identity } = setup(() => gate, { maxQueueSize: 5, maxBatchSize: 5 });
    const queued = Array.from({ length: 8 }, (_, i) => processor.enqueue(item(i)));
    expect(queued).toEqual([true, true, true, true, true, false, false, false]);
    expect(identity()).toMatchObject({ accepted: 8, dropped: 3, pending: 5 });
    release();
    await processor.flush(Date.now() + 1000);
    expect(identity()).toMatchObject({ accepted: 8, delivered: 5, dropped: 3, pending: 0 });
  });

  it('times a write out through its signal, retries, then dead-letters after maxAttempts', async () => {
    const signals: AbortSignal[] = [];
    const { processor, letters, identity } = setup(
      (_b, { signal }) => {
        signals.push(signal);
        return new Promise(() => undefined); // never settles, ignores the signal
      },
      { writeTimeoutMs: 10, maxAttempts: 3 },
    );
    processor.enqueue(item(1));
    await processor.flush(Date.now() + 2000);
    expect(signals).toHaveLength(3);
    expect(signals.every((s) => s.aborted)).toBe(true);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ reason: 'attempts-exhausted', attempts: 3, sink: 'test' });
    expect(letters[0].error).toMatch(/timed out after 10 ms/);
    expect(identity()).toMatchObject({ deadLettered: 1, retried: 2, delivered: 0, pending: 0 });
  });

  it('retries only the failed items of a partial failure', async () => {
    const { processor, batches, identity } = setup(async (batch, { attempt }) =>
      attempt === 1 ? { failed: [{ index: 1, error: new Error('nope') }] } : undefined,
    );
    processor.enqueue(item(0));
    processor.enqueue(item(1));
    processor.enqueue(item(2));
    await processor.flush(Date.now() + 1000);
    expect(batches.map((b) => b.map((i) => (i as { name: string }).name))).toEqual([['m0', 'm1', 'm2'], ['m1']]);
    expect(identity()).toMatchObject({ delivered: 3, retried: 1, deadLettered: 0 });
  });

  it('dead-letters at once what a sink says is not retryable', async () => {
    const { processor, batches, letters, identity } = setup(async () => {
      throw new SinkWriteError('bad request', { retryable: false });
    });
    processor.enqueue(item(1));
    await processor.flush(Date.now() + 1000);
    expect(batches).toHaveLength(1);
    expect(letters.map((l) => l.reason)).toEqual(['not-retryable']);
    expect(identity()).toMatchObject({ deadLettered: 1, retried: 0 });
  });

  it('reads a failed entry from its SinkWriteError where the failure is silent: not retryable, its wait, and the server code kept on the dead letter', async () => {
    const at: number[] = [];
    const { processor, batches, letters, identity } = setup(async (batch, { attempt }) => {
      at.push(Date.now());
      if (attempt > 1) return undefined;
      return {
        failed: [
          { index: 0, error: new SinkWriteError('null value in column "kind" violates not-null constraint', { retryable: false, code: '23502' }) },
          { index: 1, error: new SinkWriteError('throttled', { retryAfterMs: 150, code: 'ThrottlingException' }) },
        ],
      };
    });
    processor.enqueue(item(0));
    processor.enqueue(item(1));
    processor.enqueue(item(2));
    await processor.flush(Date.now() + 2000);
    expect(batches.map((b) => b.map((i) => (i as { name: string }).name))).toEqual([['m0', 'm1', 'm2'], ['m1']]);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(140); // the entry's own retryAfterMs
    expect(letters).toEqual([expect.objectContaining({ reason: 'not-retryable', code: '23502', error: expect.stringMatching(/not-null/) })]);
    expect(identity()).toMatchObject({ delivered: 2, deadLettered: 1, lastErrorCode: '23502' });
  });

  it('a flag on the failure wins over its error, and a code on the failure is kept too', async () => {
    const { processor, letters, identity } = setup(async () => ({
      failed: [{ index: 0, error: new SinkWriteError('refused', { retryable: true, code: 'X' }), retryable: false, code: 'ERR' }],
    }));
    processor.enqueue(item(0));
    await processor.flush(Date.now() + 1000);
    expect(letters).toEqual([expect.objectContaining({ reason: 'not-retryable', code: 'ERR' })]);
    expect(identity().retried).toBe(0);
  });

  it('counts the duplicates a sink skipped as delivered and as duplicates', async () => {
    const { processor, identity } = setup(async () => ({ duplicates: [0, 2] }));
    for (let i = 0; i < 3; i++) processor.enqueue(item(i));
    await processor.flush(Date.now() + 1000);
    expect(identity()).toMatchObject({ accepted: 3, delivered: 3, duplicates: 2, deadLettered: 0 });
  });

  it('keeps the code of a whole failed write on its dead letters', async () => {
    const { processor, letters } = setup(async () => {
      throw new SinkWriteError('WRONGTYPE Operation against a key holding the wrong kind of value', { retryable: false, code: 'WRONGTYPE' });
    });
    processor.enqueue(item(0));
    await processor.flush(Date.now() + 1000);
    expect(letters).toEqual([expect.objectContaining({ code: 'WRONGTYPE' })]);
  });

  it('waits at least the retryAfterMs a sink asks for', async () => {
    const at: number[] = [];
    const { processor, identity } = setup(async (_b, { attempt }) => {
      at.push(Date.now());
      if (attempt === 1) throw new SinkWriteError('slow down', { retryAfterMs: 120 });
    });
    processor.enqueue(item(1));
    await processor.flush(Date.now() + 2000);
    expect(at).toHaveLength(2);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(110);
    expect(identity().delivered).toBe(1);
  });

  it('turns a synchronous throw into a failed write, not a crash', async () => {
    const { processor, failures, identity } = setup(
      (() => {
        throw new Error('sync boom');
      }) as never,
      { maxAttempts: 2 },
    );
    processor.enqueue(item(1));
    await processor.flush(Date.now() + 1000);
    expect(failures[0]).toMatch(/sync boom/);
    expect(identity()).toMatchObject({ deadLettered: 1 });
  });

  it('shutdown drains what it can, then dead-letters the rest by the deadline', async () => {
    const signals: AbortSignal[] = [];
    const { processor, letters, identity } = setup(
      (_b, { signal }) => {
        signals.push(signal);
        return new Promise(() => undefined);
      },
      { writeTimeoutMs: 60_000, maxBatchSize: 2 },
    );
    for (let i = 0; i < 5; i++) processor.enqueue(item(i));
    const lost = await processor.shutdown(Date.now() + 100);
    // It resolved although the write never settles and its 60 s timeout never fired: the deadline aborted it.
    expect(signals).toHaveLength(1);
    expect(signals[0].aborted).toBe(true);
    expect(lost).toBe(5);
    // The batch in flight at the deadline may have been delivered; the rest was never sent.
    expect(letters.map((l) => l.reason)).toEqual(['shutdown-in-flight', 'shutdown-in-flight', 'shutdown', 'shutdown', 'shutdown']);
    expect(identity()).toMatchObject({ accepted: 5, deadLettered: 5, pending: 0 });
    expect(await processor.shutdown(Date.now() + 100)).toBe(0); // idempotent
  });

  it("at the shutdown deadline, a write's own answer to its abort signal counts: delivered, or its own error", async () => {
    // A sink that ends its write when aborted, e.g. by flushing what it has: the write did happen.
    const delivered = setup((_b, { signal }) => new Promise((resolve) => signal.addEventListener('abort', () => resolve())), { writeTimeoutMs: 60_000 });
    delivered.processor.enqueue(item(1));
    expect(await delivered.processor.shutdown(Date.now() + 100)).toBe(0);
    expect(delivered.letters).toHaveLength(0);
    expect(delivered.identity()).toMatchObject({ accepted: 1, delivered: 1, deadLettered: 0 });
    // A sink that rejects with its own (non-retryable) error when aborted: that error is what is recorded.
    const failed = setup(
      (_b, { signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(new SinkWriteError('refused while closing', { retryable: false })))),
      { writeTimeoutMs: 60_000 },
    );
    failed.processor.enqueue(item(2));
    expect(await failed.processor.shutdown(Date.now() + 100)).toBe(1);
    expect(failed.failures.join('\n')).toMatch(/refused while closing/);
    expect(failed.identity()).toMatchObject({ accepted: 1, deadLettered: 1 });
  });

  it('shutdown with a healthy sink loses nothing', async () => {
    const { processor, identity } = setup(async () => later(2), { maxBatchSize: 10, flushIntervalMs: 60_000 });
    for (let i = 0; i < 95; i++) processor.enqueue(item(i));
    expect(await processor.shutdown(Date.now() + 2000)).toBe(0);
    expect(identity()).toMatchObject({ accepted: 95, delivered: 95, pending: 0 });
  });

  it('keeps the identity at the moment dead letters are reported', async () => {
    const { processor, sums, identity } = setup(async () => {
      throw new SinkWriteError('no', { retryable: false });
    });
    for (let i = 0; i < 3; i++) processor.enqueue(item(i));
    await processor.flush(Date.now() + 1000);
    expect(sums.length).toBeGreaterThan(0);
    for (const [accepted, sum] of sums) expect(sum).toBe(accepted);
    identity();
  });

  it('a malformed sink result dead-letters the batch instead of losing it or crashing', async () => {
    const { processor, letters, identity } = setup(async () => ({ failed: 2 }) as never);
    processor.enqueue(item(1));
    processor.enqueue(item(2));
    await processor.flush(Date.now() + 1000);
    expect(letters).toHaveLength(2);
    expect(letters[0].error).toMatch(/malformed result/);
    expect(identity()).toMatchObject({ accepted: 2, deadLettered: 2, pending: 0 });
  });

  it('a write that settles within the grace period after its timeout counts, and writes never overlap', async () => {
    const watch = overlapWatch(15); // past the 10 ms timeout, within the grace period (another 10 ms)
    const { processor, identity } = setup(watch.write, { writeTimeoutMs: 10, maxBatchSize: 1, maxAttempts: 1 });
    for (let i = 0; i < 3; i++) processor.enqueue(item(i));
    await processor.flush(Date.now() + 2000);
    expect(watch.most()).toBe(1);
    expect(identity()).toMatchObject({ delivered: 3, deadLettered: 0 });
  });

  it('flush() waits for the items accepted before it, even when later items are dropped', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { processor } = setup(() => gate, { maxQueueSize: 2, maxBatchSize: 2 });
    processor.enqueue(item(1));
    processor.enqueue(item(2));
    const flushed = processor.flush(Date.now() + 150);
    for (let i = 0; i < 5; i++) processor.enqueue(item(10 + i)); // dropped: queue full
    expect(await flushed).toBe(false); // the two accepted items are still pending
    release();
    expect(await processor.flush(Date.now() + 1000)).toBe(true);
  });

  it('shutdown waits for items that arrive during the drain instead of aborting them', async () => {
    const { processor, letters, identity } = setup(async () => later(20), { maxBatchSize: 1 });
    processor.enqueue(item(1));
    const stopping = processor.shutdown(Date.now() + 2000);
    setTimeout(() => processor.enqueue(item(2)), 5); // e.g. another module's shutdown hook
    expect(await stopping).toBe(0);
    expect(letters).toEqual([]);
    expect(identity()).toMatchObject({ accepted: 2, delivered: 2 });
  });

  it('after shutdown, new items are dead-lettered at once and the sink is not called again', async () => {
    const { processor, batches, letters, identity } = setup(ok);
    await processor.shutdown(Date.now() + 100);
    processor.enqueue(item(1));
    await jest.advanceTimersByTimeAsync(20);
    expect(batches).toHaveLength(0);
    expect(letters.map((l) => l.reason)).toEqual(['closed']);
    expect(identity()).toMatchObject({ accepted: 1, deadLettered: 1, pending: 0 });
  });

  it('exports outside the async context of the request that enqueued', async () => {
    // On real timers: a real setImmediate or setTimeout runs its callback in the async context it was
    // scheduled from (here, request A's), which is what the processor must not inherit. Fake timers
    // run every callback from the test's own context, so this test could not fail on them.
    useFakeClock(false);
    const storage = new AsyncLocalStorage<string>();
    const seen: Array<string | undefined> = [];
    const { processor } = setup(async () => void seen.push(storage.getStore()), { flushIntervalMs: 1 });
    storage.run('request A', () => processor.enqueue(item(1)));
    await processor.flush(Date.now() + 1000);
    storage.run('request B', () => processor.enqueue(item(2)));
    await later(20);
    expect(seen).toEqual([undefined, undefined]);
  });

  it('exports outside the request’s async context on both paths: the linger timer and a full batch', async () => {
    // The case above cannot fail (flush() cancels request A's timer, and B's export starts from the
    // export loop): here each path starts from a request while the processor is idle.
    useFakeClock(false);
    const storage = new AsyncLocalStorage<string>();
    const seen: Array<string | undefined> = [];
    const { processor } = setup(async () => void seen.push(storage.getStore()), { flushIntervalMs: 1, maxBatchSize: 3 });
    storage.run('timer path', () => processor.enqueue(item(1)));
    await later(30);
    storage.run('immediate path', () => [2, 3, 4].forEach((i) => processor.enqueue(item(i))));
    await later(30);
    expect(seen).toEqual([undefined, undefined]);
  });
});
