import { AsyncLocalStorage } from 'node:async_hooks';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { CallbackItem } from '../../core/items/deferred-item.interface';
import { CallbackRunner } from './callback-runner';
import { CALLBACK_RUNNER_DEFAULTS, type CallbackRunnerOptions } from './callback-runner.options';
import type { DeadLetter } from '../../core/dead-letter.interface';

const later = (ms: number) => new Promise((r) => setTimeout(r, ms));

function setup(options: Partial<CallbackRunnerOptions> = {}) {
  const letters: DeadLetter[] = [];
  const failures: string[] = [];
  const runner = new CallbackRunner(
    { ...CALLBACK_RUNNER_DEFAULTS, ...options },
    { deadLetter: (l) => void letters.push(...l), writeFailed: (_sink, message) => void failures.push(message) },
  );
  /** The counters, checked against the accounting identity on every read. */
  const identity = () => {
    const s = runner.stats();
    expect(s.accepted).toBe(s.delivered + s.pending + s.dropped + s.deadLettered);
    return s;
  };
  return { runner, letters, failures, identity };
}

const callback = (fn: CallbackItem['fn']): CallbackItem => ({ kind: 'callback', fn, when: 'always', createdAt: Date.now() });

/** A callback that runs until released, recording that it started. */
function gated() {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  const state = { started: false, release: () => release() };
  return { state, item: callback(() => ((state.started = true), done)) };
}

describe('CallbackRunner', () => {
  it('a slow callback holds only its own slot: the others run and finish meanwhile', async () => {
    const { runner, identity } = setup({ concurrency: 3 });
    const slow = gated();
    runner.enqueue(slow.item);
    let quick = 0;
    for (let i = 0; i < 50; i++) runner.enqueue(callback(async () => void (await later(1), quick++)));
    // Two free slots run the 50 one after another while the slow one holds its slot (it is never
    // released before the check): however slow the machine's timers, all 50 finish meanwhile.
    for (let waited = 0; quick < 50 && waited < 10_000; waited += 10) await later(10);
    expect(slow.state.started).toBe(true);
    expect(quick).toBe(50);
    expect(identity()).toMatchObject({ accepted: 51, delivered: 50, pending: 1 });
    expect(runner.runnerStats()).toMatchObject({ running: 1, queued: 0 });
    slow.state.release();
    expect(await runner.flush(Date.now() + 1000)).toBe(true);
    expect(identity()).toMatchObject({ delivered: 51, pending: 0 });
  });

  it('never runs more than `concurrency` callbacks at once', async () => {
    const { runner, identity } = setup({ concurrency: 4 });
    let now = 0;
    let most = 0;
    for (let i = 0; i < 40; i++) {
      runner.enqueue(
        callback(async () => {
          most = Math.max(most, ++now);
          await later(i % 3);
          now--;
        }),
      );
    }
    await runner.flush(Date.now() + 2000);
    expect(most).toBe(4);
    expect(identity()).toMatchObject({ delivered: 40, pending: 0 });
  });

  it('times a callback out through its signal and dead-letters it at once; it keeps only its own slot until it ends', async () => {
    const { runner, letters, identity } = setup({ concurrency: 2, timeoutMs: 30 });
    let signal: AbortSignal | undefined;
    let finish!: () => void;
    runner.enqueue(callback((s) => ((signal = s), new Promise<void>((r) => (finish = r))))); // ignores its signal
    let after = 0;
    runner.enqueue(callback(() => void after++));
    await later(80);
    expect(signal!.aborted).toBe(true);
    expect(after).toBe(1); // not blocked by the callback that ignores its signal
    expect(letters.map((l) => [l.reason, l.error])).toEqual([['timeout', expect.stringMatching(/timed out after 30 ms/)]]);
    expect(runner.runnerStats()).toMatchObject({ timedOut: 1, overdue: 1, finishedLate: 0, running: 0 });
    expect(identity()).toMatchObject({ accepted: 2, delivered: 1, deadLettered: 1, pending: 0 });
    // The overdue callback still holds its slot: with one slot left, callbacks run one at a time.
    let most = 0;
    let now = 0;
    for (let i = 0; i < 5; i++) runner.enqueue(callback(async () => void ((most = Math.max(most, ++now)), await later(2), now--)));
    await runner.flush(Date.now() + 1000);
    expect(most).toBe(1);
    finish();
    await later(1);
    expect(runner.runnerStats()).toMatchObject({ timedOut: 1, overdue: 0, finishedLate: 1 });
    expect(identity()).toMatchObject({ delivered: 6, deadLettered: 1 }); // still counted as what it was
  });

  it('times each callback out at its own deadline, counted from its own start, also one started by a freed slot', async () => {
    const { runner, letters, identity } = setup({ concurrency: 2, timeoutMs: 60 });
    const t0 = performance.now();
    const ran: Record<string, { started: number; aborted?: number }> = {};
    // honours its signal: ends when aborted, freeing its slot
    const honouring = (name: string) =>
      callback((signal) => {
        const run: { started: number; aborted?: number } = (ran[name] = { started: performance.now() - t0 });
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => ((run.aborted = performance.now() - t0), resolve())));
      });
    runner.enqueue(honouring('a'));
    await later(25);
    runner.enqueue(honouring('b'));
    runner.enqueue(honouring('c')); // waits for a slot: starts when `a` times out
    let quick = 0;
    runner.enqueue(callback(() => void (quick = performance.now() - t0))); // starts when `b` times out
    await later(300);
    expect(letters.map((l) => l.reason)).toEqual(['timeout', 'timeout', 'timeout']);
    for (const name of ['a', 'b', 'c']) expect(ran[name].aborted! - ran[name].started).toBeGreaterThanOrEqual(59);
    expect(ran.c.started).toBeGreaterThanOrEqual(ran.a.aborted! - 1);
    expect(ran.c.aborted! - ran.c.started).toBeLessThan(150);
    expect(quick).toBeGreaterThanOrEqual(ran.b.aborted! - 1);
    expect(identity()).toMatchObject({ accepted: 4, delivered: 1, deadLettered: 3, pending: 0 });
  });

  it('gives a signal only to a callback that declares a parameter; one without is still timed out', async () => {
    const { runner, letters } = setup({ timeoutMs: 20 });
    const seen: unknown[] = [];
    runner.enqueue(callback(function (this: unknown, ...rest: unknown[]) {
      seen.push(rest[0]); // rest parameters: length 0, so no signal
      return later(60);
    }));
    runner.enqueue(callback((signal) => void seen.push(signal)));
    await later(100);
    expect(seen[0]).toBeUndefined();
    expect(seen[1]).toBeInstanceOf(AbortSignal);
    expect(letters.map((l) => [l.reason, l.error])).toEqual([['timeout', 'callback timed out after 20 ms']]);
  });

  it('drops (and counts) callbacks only when every slot is busy and the queue is full', async () => {
    const { runner, identity } = setup({ concurrency: 2, maxQueueSize: 3 });
    const gates = Array.from({ length: 6 }, gated);
    const queued = gates.map((g) => runner.enqueue(g.item));
    // the runner starts callbacks on a later turn: wait for both slots (a busy machine takes more than a few ms)
    for (let i = 0; i < 200 && runner.runnerStats().running < 2; i++) await later(10);
    expect(queued).toEqual([true, true, true, true, true, false]);
    expect(identity()).toMatchObject({ accepted: 6, dropped: 1, pending: 5 });
    expect(runner.runnerStats()).toMatchObject({ running: 2, queued: 3 });
    for (const g of gates) g.state.release();
    await runner.flush(Date.now() + 1000);
    expect(identity()).toMatchObject({ delivered: 5, dropped: 1, pending: 0 });
  });

  it('retries a throwing callback up to maxAttempts, and never one whose error says it is not retryable', async () => {
    const { runner, letters, identity } = setup({ maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 });
    let tries = 0;
    runner.enqueue(callback(() => (++tries < 3 ? Promise.reject(new Error(`try ${tries}`)) : undefined)));
    runner.enqueue(callback(() => Promise.reject(new SinkWriteError('bad input', { retryable: false }))));
    runner.enqueue(callback(() => Promise.reject(new Error('always'))));
    await runner.flush(Date.now() + 1000);
    expect(tries).toBe(3);
    expect(letters.map((l) => [l.reason, l.attempts])).toEqual([
      ['not-retryable', 1],
      ['attempts-exhausted', 3],
    ]);
    expect(identity()).toMatchObject({ accepted: 3, delivered: 1, deadLettered: 2, retried: 4 });
  });

  it('flush waits for the callbacks accepted before it, not for later ones', async () => {
    const { runner } = setup();
    const first = gated();
    runner.enqueue(first.item);
    const flushed = runner.flush(Date.now() + 1000);
    const second = gated();
    runner.enqueue(second.item);
    setTimeout(first.state.release, 10);
    expect(await flushed).toBe(true);
    expect(runner.stats().pending).toBe(1);
    expect(await runner.flush(Date.now() + 20)).toBe(false);
    second.state.release();
  });

  it('shutdown drains, then at its deadline aborts what runs and dead-letters the rest; later callbacks are "closed"', async () => {
    const { runner, letters, identity } = setup({ concurrency: 1 });
    let quick = 0;
    runner.enqueue(callback(async () => void (await later(5), quick++)));
    const hung = gated();
    runner.enqueue(hung.item);
    runner.enqueue(callback(() => void quick++));
    const lost = await runner.shutdown(Date.now() + 100);
    expect(quick).toBe(1);
    expect(lost).toBe(2);
    expect(letters.map((l) => l.reason)).toEqual(['shutdown', 'shutdown']);
    expect(runner.enqueue(callback(() => void quick++))).toBe(false);
    expect(runner.closed).toBe(true);
    expect(letters.at(-1)).toMatchObject({ reason: 'closed', attempts: 0 });
    expect(identity()).toMatchObject({ accepted: 4, delivered: 1, deadLettered: 3, pending: 0 });
    hung.state.release();
    await later(1);
    expect(runner.runnerStats()).toMatchObject({ overdue: 0, finishedLate: 1 });
    expect(quick).toBe(1);
  });

  it('runs callbacks outside the async context of the request that deferred or flushed them', async () => {
    const storage = new AsyncLocalStorage<string>();
    const seen: Array<string | undefined> = [];
    const { runner } = setup({ concurrency: 1, maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 1 });
    storage.run('request A', () => runner.enqueue(callback(() => void seen.push(storage.getStore()))));
    await runner.flush(Date.now() + 1000);
    runner.enqueue(callback(() => void seen.push(storage.getStore())));
    await storage.run('request B', () => runner.flush(Date.now() + 1000)); // flush() starts it: not in B's context
    let tries = 0;
    runner.enqueue(callback(() => (seen.push(storage.getStore()), ++tries === 1 ? Promise.reject(new Error('x')) : undefined)));
    await storage.run('request C', () => runner.flush(Date.now() + 1000)); // nor its retry
    expect(seen).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('inline mode starts the callback in the caller’s turn', () => {
    const { runner } = setup();
    let ran = false;
    runner.enqueue(callback(() => void (ran = true)), true);
    expect(ran).toBe(true);
  });

  it('settles a callback that returns no promise when it returns; thousands of them through one slot run in order', async () => {
    const { runner, letters, identity } = setup({ concurrency: 1, maxQueueSize: 30_000 });
    const order: number[] = [];
    runner.enqueue(callback(() => void order.push(-1)), true);
    // Settled in the caller's turn: no promise, no microtask.
    expect(identity()).toMatchObject({ accepted: 1, delivered: 1, pending: 0 });
    // Each one ends as it starts: one slot must still start them one by one from a loop, not by
    // recursing into the next (20,000 nested starts would overflow the stack).
    for (let i = 0; i < 20_000; i++) runner.enqueue(callback(() => void order.push(i)));
    runner.enqueue(callback(() => {
      throw new Error('sync failure');
    }));
    expect(await runner.flush(Date.now() + 5000)).toBe(true);
    expect(order).toHaveLength(20_001);
    expect(order.every((n, i) => n === i - 1)).toBe(true);
    expect(letters.map((l) => [l.reason, l.error])).toEqual([['attempts-exhausted', 'sync failure']]);
    expect(identity()).toMatchObject({ accepted: 20_002, delivered: 20_001, deadLettered: 1, pending: 0 });
  });

  it('awaits any thenable a callback returns; a `then` that throws when read fails the callback', async () => {
    const { runner, letters, identity } = setup();
    let resolveLater!: () => void;
    const thenable = { then: (onOk: () => void) => void (resolveLater = onOk) };
    runner.enqueue(callback(() => thenable));
    const hostile = Object.defineProperty({}, 'then', {
      get() {
        throw new Error('then getter threw');
      },
    });
    runner.enqueue(callback(() => hostile));
    await later(5);
    expect(identity()).toMatchObject({ accepted: 2, delivered: 0, deadLettered: 1, pending: 1 });
    expect(letters.map((l) => l.error)).toEqual(['then getter threw']);
    resolveLater();
    expect(await runner.flush(Date.now() + 1000)).toBe(true);
    expect(identity()).toMatchObject({ delivered: 1, deadLettered: 1, pending: 0 });
  });

  it('retries a callback that threw synchronously outside the request’s async context; one deferred by a synchronous callback runs too', async () => {
    const storage = new AsyncLocalStorage<string>();
    const seen: Array<string | undefined> = [];
    const { runner, letters, identity } = setup({ concurrency: 1, maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 1 });
    let tries = 0;
    storage.run('request A', () =>
      runner.enqueue(
        callback(() => {
          seen.push(storage.getStore());
          if (++tries === 1) throw new Error('first try fails');
          // a synchronous callback that defers another one while the runner is starting callbacks
          runner.enqueue(callback(() => void seen.push(`nested ${storage.getStore()}`)));
        }),
      ),
    );
    expect(await runner.flush(Date.now() + 1000)).toBe(true);
    expect(await runner.flush(Date.now() + 1000)).toBe(true);
    expect(seen).toEqual([undefined, undefined, 'nested undefined']);
    expect(letters).toEqual([]);
    expect(identity()).toMatchObject({ accepted: 2, delivered: 2, retried: 1, pending: 0 });
  });

  it('a promise whose `then` or `constructor` throws when read fails its callback, not the runner', async () => {
    const { runner, letters, identity } = setup();
    const throwing = (key: string) =>
      Object.defineProperty(Promise.resolve(), key, {
        get() {
          throw new Error(`${key} getter threw`);
        },
      });
    expect(runner.enqueue(callback(() => throwing('then')))).toBe(true);
    expect(runner.enqueue(callback(() => throwing('constructor')))).toBe(true);
    let after = false;
    runner.enqueue(callback(() => void (after = true)));
    expect(await runner.flush(Date.now() + 1000)).toBe(true);
    expect(after).toBe(true);
    expect(letters.map((l) => l.error)).toEqual(['then getter threw', 'constructor getter threw']);
    expect(identity()).toMatchObject({ accepted: 3, delivered: 1, deadLettered: 2, pending: 0 });
  });

  it('shows no callback counts until a callback is deferred', () => {
    const { runner } = setup();
    expect(runner.kindCounts()).toEqual({});
    runner.enqueue(callback(() => undefined), true);
    expect(runner.kindCounts()).toEqual({ callback: expect.objectContaining({ accepted: 1, delivered: 1 }) });
  });

  it('keeps the five slowest durations, longest first', async () => {
    const { runner } = setup();
    for (const ms of [1, 40, 3, 25, 2, 60, 4, 10]) runner.enqueue(callback(() => later(ms)));
    await runner.flush(Date.now() + 1000);
    const slowest = runner.runnerStats().slowest.map((s) => s.ms);
    expect(slowest).toHaveLength(5);
    expect(slowest[0]).toBeGreaterThanOrEqual(59);
    expect([...slowest].sort((a, b) => b - a)).toEqual(slowest);
    expect(slowest[4]).toBeGreaterThanOrEqual(3);
  });
});
