import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import type { DeferredItem } from '../core/items/deferred-item.interface';
import { resolveOptions } from '../nest/options/resolve-options';
import { MemorySink } from '../sinks/memory/memory.sink';
import type { DeadLetter } from '../core/dead-letter.interface';
import { Dispatcher } from './dispatcher';
import type { SinkItem } from '../core/items/deferred-item.interface';
import { SinkWriteError } from '../core/errors/sink-write.error';

const quiet = () => {
  const logger = new Logger('test');
  const warnings: string[] = [];
  jest.spyOn(logger, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
  jest.spyOn(logger, 'error').mockImplementation((m: unknown) => void warnings.push(String(m)));
  return { logger, warnings };
};

const job = (data: unknown, extra: Partial<DeferredItem> = {}): DeferredItem =>
  ({ kind: 'job', queue: 'q', name: 'n', data, when: 'always', createdAt: 0, ...extra }) as DeferredItem;

describe('Dispatcher', () => {
  it.each([
    ['circular data', (() => { const c: Record<string, unknown> = {}; c.self = c; return job(c); })(), /job "n" on queue "q": its data cannot be serialised to JSON \(.*circular/i],
    ['BigInt', job({ n: 10n }), /BigInt/],
    ['oversized data', job({ big: 'x'.repeat(200) }), /payload is \d+ bytes, over maxItemBytes \(100\)/],
    ['NaN metric', { kind: 'metric', name: 'm', value: Number.NaN, when: 'always', createdAt: 0 } as DeferredItem, /finite number/],
    ['unknown sink', job({ fine: true }, { sink: 'nowhere' }), /no sink is named "nowhere"/],
    ['job to the callback runner', job({ fine: true }, { sink: 'callbacks' }), /no sink is named "callbacks"/],
    ['bad when', job({ fine: true }, { when: 'sometimes' as never }), /"sometimes" is not a condition/],
  ])('rejects %s with a clear message, counted, without touching other items', async (_what, bad, message) => {
    const sink = new MemorySink();
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [sink], maxItemBytes: 100 }), logger);
    dispatcher.dispatch(bad);
    dispatcher.dispatch(job({ fine: true }));
    await dispatcher.flush(1000);
    expect(sink.items).toHaveLength(1);
    expect(dispatcher.stats()).toMatchObject({ rejected: 1, accepted: 1, delivered: 1 });
    expect(warnings.join('\n')).toMatch(message);
  });

  it('gives every accepted item one id, kept on its dead letter and when forwarded to a fallback sink', async () => {
    const fallback = new MemorySink({ name: 'fallback' });
    const failing = { name: 'failing', write: async () => Promise.reject(new SinkWriteError('no', { retryable: false })) };
    const { logger } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [new MemorySink(), failing, fallback], deadLetter: 'fallback' }), logger);
    const items = [job(1), job(2), job(3, { sink: 'failing' })];
    for (const item of items) dispatcher.dispatch(item);
    await dispatcher.flush(1000);
    await dispatcher.flush(1000);
    const ids = items.map((item) => item.id);
    expect(ids).toEqual([expect.stringMatching(/^dw-[0-9a-f-]{36}$/), expect.any(String), expect.any(String)]);
    expect(new Set(ids).size).toBe(3);
    expect(dispatcher.deadLetters()[0].item.id).toBe(ids[2]);
    expect(fallback.items.map((item) => item.id)).toEqual([ids[2]]);
  });

  it('fans an item out to several sinks: a copy to each, accounted for by each sink on its own; the totals count every copy', async () => {
    const prometheus = new MemorySink({ name: 'prometheus' });
    const failing = { name: 'opentelemetry', write: async () => Promise.reject(new SinkWriteError('refused', { retryable: false })) };
    const picky = Object.assign(new MemorySink({ name: 'picky' }), { validate: (item: SinkItem) => {
      if (item.kind === 'metric' && item.value < 0) throw new Error('no negative values here');
    } });
    const { logger } = quiet();
    const dispatcher = new Dispatcher(
      resolveOptions({ sinks: [new MemorySink(), prometheus, failing, picky], routing: { metric: ['prometheus', 'opentelemetry', 'picky'], default: 'memory' } }),
      logger,
    );
    const point = { kind: 'metric', name: 'orders', value: 1, when: 'always', createdAt: 0 } as DeferredItem;
    dispatcher.dispatch(point);
    dispatcher.dispatch({ kind: 'metric', name: 'refunds', value: -1, when: 'always', createdAt: 0 } as DeferredItem);
    dispatcher.dispatch(job(1, { sink: ['memory', 'prometheus'] }));
    await dispatcher.flush(1000);
    const stats = dispatcher.stats();
    expect(stats.sinks.prometheus).toMatchObject({ accepted: 3, delivered: 3, deadLettered: 0 });
    expect(stats.sinks.opentelemetry).toMatchObject({ accepted: 2, delivered: 0, deadLettered: 2 });
    expect(stats.sinks.picky).toMatchObject({ accepted: 1, delivered: 1 });
    expect(stats.sinks.memory).toMatchObject({ accepted: 1, delivered: 1 });
    expect(stats).toMatchObject({ accepted: 7, delivered: 5, deadLettered: 2, rejected: 1 });
    expect(prometheus.items[0]).toBe(point); // the same item, with one id, in each sink
    expect(dispatcher.deadLetters().map((l) => l.item.id)).toContain(point.id);
  });

  it.each([
    [{ metric: ['prometheus', 'nope'] }, /routing\.metric.*no sink is named "nope"/],
    [{ metric: [] }, /must be a sink's name or a non-empty array of names/],
    [{ metric: ['prometheus', 'prometheus'] }, /names a sink twice/],
  ])('refuses fan-out routing %j at bootstrap, saying how to fix it', (routing, message) => {
    expect(() => resolveOptions({ sinks: [new MemorySink({ name: 'prometheus' })], routing: routing as never })).toThrow(message);
  });

  it('rejects (and counts) an item sent by its own sink option to a sink that does not take its kind', async () => {
    const bull = Object.assign(new MemorySink({ name: 'bull' }), { kinds: ['job'] as const });
    const memory = new MemorySink();
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [bull, memory] }), logger);
    dispatcher.dispatch({ kind: 'log', level: 'info', message: 'm', sink: 'bull', when: 'always', createdAt: 0 });
    dispatcher.dispatch({ kind: 'log', level: 'info', message: 'routed', when: 'always', createdAt: 0 });
    await dispatcher.flush(1000);
    expect(dispatcher.stats()).toMatchObject({ rejected: 1, accepted: 1, delivered: 1 });
    expect(memory.items).toEqual([expect.objectContaining({ message: 'routed' })]);
    expect(warnings.join('\n')).toMatch(/sink "bull" takes only job items/);
  });

  it('rate-limits rejection warnings per kind, whatever the messages say', async () => {
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ maxItemBytes: 10 }), logger);
    for (let i = 0; i < 50; i++) dispatcher.dispatch(job({ payload: `too large ${i}` }));
    expect(dispatcher.stats().rejected).toBe(50);
    expect(warnings).toHaveLength(1);
  });

  it('routes by kind and item sink, runs callbacks in-process', async () => {
    const a = new MemorySink({ name: 'a' });
    const b = new MemorySink({ name: 'b' });
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [a, b], routing: { log: 'b' } }), quiet().logger);
    let ran = 0;
    dispatcher.dispatch(job(1));
    dispatcher.dispatch({ kind: 'log', level: 'info', message: 'm', when: 'always', createdAt: 0 });
    dispatcher.dispatch(job(2, { sink: 'b' }));
    dispatcher.dispatch({ kind: 'callback', fn: () => void ran++, when: 'always', createdAt: 0 });
    expect(await dispatcher.flush(1000)).toBe(true);
    expect(a.items.map((i) => i.kind)).toEqual(['job']);
    expect(b.items.map((i) => i.kind).sort()).toEqual(['job', 'log']);
    expect(ran).toBe(1);
    expect(dispatcher.stats().sinks.callbacks.delivered).toBe(1);
  });

  it('keeps dead letters in a ring and forwards them to the deadLetter handler', async () => {
    const received: DeadLetter[] = [];
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(
      resolveOptions({ deadLetterCapacity: 2, deadLetter: (letters) => void received.push(...letters) }),
      logger,
    );
    for (let i = 0; i < 3; i++) {
      dispatcher.dispatch({ kind: 'callback', fn: () => Promise.reject(new Error(`cb ${i}`)), when: 'always', createdAt: 0 });
    }
    await dispatcher.flush(1000);
    expect(received.map((l) => l.error)).toEqual(['cb 0', 'cb 1', 'cb 2']);
    expect(dispatcher.deadLetters().map((l) => l.error)).toEqual(['cb 1', 'cb 2']);
    expect(dispatcher.stats()).toMatchObject({ deadLettered: 3, accepted: 3 });
    expect(warnings.filter((w) => /dead-lettered/.test(w))).toHaveLength(1); // rate-limited
  });

  it('a throwing dead-letter handler is caught and logged', async () => {
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(
      resolveOptions({
        deadLetter: () => {
          throw new Error('handler down');
        },
      }),
      logger,
    );
    dispatcher.dispatch({ kind: 'callback', fn: () => Promise.reject(new Error('x')), when: 'always', createdAt: 0 });
    await dispatcher.flush(1000);
    await new Promise((r) => setImmediate(r));
    expect(warnings.join('\n')).toMatch(/Dead-letter handler failed: handler down/);
  });

  it('forwards dead letters to a fallback sink through its own queue, never back to itself', async () => {
    const fallback = new MemorySink({ name: 'fallback' });
    const primary = {
      name: 'primary',
      write: async () => {
        throw new SinkWriteError('refused', { retryable: false });
      },
    };
    const { logger } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [primary, fallback], deadLetter: 'fallback' }), logger);
    dispatcher.dispatch(job({ id: 1 }));
    dispatcher.dispatch({ kind: 'callback', fn: () => Promise.reject(new Error('cb')), when: 'always', createdAt: 0 });
    await dispatcher.flush(1000);
    await dispatcher.flush(1000); // the forwarded item was accepted by the fallback during the first flush
    expect(fallback.items).toEqual([expect.objectContaining({ kind: 'job', data: { id: 1 } })]);
    const stats = dispatcher.stats();
    expect(stats.sinks.primary).toMatchObject({ accepted: 1, deadLettered: 1 });
    expect(stats.sinks.fallback).toMatchObject({ accepted: 1, delivered: 1 });
    expect(stats.accepted).toBe(stats.delivered + stats.pending + stats.dropped + stats.deadLettered);
  });

  it("runs the fallback sink's validate on a forwarded dead letter: it may prepare it, or refuse it (then it stays a dead letter)", async () => {
    const fallback = Object.assign(new MemorySink({ name: 'fallback' }), {
      validate(item: SinkItem) {
        if (item.kind === 'job' && (item.data as { id: number }).id === 2) throw new Error('no room for job 2');
        if (item.kind === 'job') (item as { opts?: object }).opts = { jobId: `stable-${(item.data as { id: number }).id}` };
      },
    });
    const primary = {
      name: 'primary',
      write: async () => {
        throw new SinkWriteError('refused', { retryable: false });
      },
    };
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [primary, fallback], deadLetter: 'fallback' }), logger);
    dispatcher.dispatch(job({ id: 1 }));
    dispatcher.dispatch(job({ id: 2 }));
    await dispatcher.flush(1000);
    await dispatcher.flush(1000);
    expect(fallback.items).toEqual([expect.objectContaining({ data: { id: 1 }, opts: { jobId: 'stable-1' } })]);
    expect(warnings.join('\n')).toMatch(/A dead letter was not forwarded to sink "fallback": no room for job 2/);
    expect(dispatcher.stats().sinks.fallback).toMatchObject({ accepted: 1, delivered: 1 });
  });

  it('a sink whose shutdown() hangs does not hold the application shutdown past its deadline', async () => {
    const { logger, warnings } = quiet();
    const hanging = Object.assign(new MemorySink({ name: 'stuck' }), { shutdown: () => new Promise<void>(() => undefined) });
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [hanging], shutdownTimeoutMs: 50 }), logger);
    const report = await dispatcher.shutdown();
    expect(report).toEqual({ drained: true, undelivered: {} });
    expect(warnings.join('\n')).toMatch(/Sink "stuck" did not shut down within \d+ ms/);
  });

  it('a sink that hangs does not hold back another sink', async () => {
    const healthy = new MemorySink({ name: 'healthy' });
    const hanging = { name: 'hanging', write: () => new Promise<void>(() => undefined) };
    const { logger } = quiet();
    const dispatcher = new Dispatcher(
      resolveOptions({ sinks: [healthy, hanging], routing: { log: 'hanging' }, maxBatchSize: 10, writeTimeoutMs: 60_000 }),
      logger,
    );
    for (let i = 0; i < 100; i++) {
      dispatcher.dispatch(job({ i }));
      dispatcher.dispatch({ kind: 'log', level: 'info', message: `log ${i}`, when: 'always', createdAt: Date.now() });
    }
    await healthy.waitFor(100);
    const stats = dispatcher.stats();
    expect(stats.sinks.healthy).toMatchObject({ accepted: 100, delivered: 100, pending: 0 });
    expect(stats.sinks.hanging).toMatchObject({ accepted: 100, delivered: 0, pending: 100, inFlight: 10 });
    expect(stats.accepted).toBe(stats.delivered + stats.pending + stats.dropped + stats.deadLettered);
  });

  it('counts and names items deferred after shutdown as "closed", never as a full queue', async () => {
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ shutdownTimeoutMs: 100 }), logger);
    await dispatcher.shutdown();
    dispatcher.dispatch(job(1));
    dispatcher.dispatch(job(2));
    dispatcher.dispatch({ kind: 'callback', fn: () => undefined, when: 'always', createdAt: 0 });
    const stats = dispatcher.stats();
    expect(stats).toMatchObject({ accepted: 3, deadLettered: 3, dropped: 0, closed: 3, pending: 0 });
    expect(dispatcher.deadLetters().map((l) => l.reason)).toEqual(['closed', 'closed', 'closed']);
    expect(warnings.join('\n')).not.toMatch(/full/);
    expect(warnings.filter((w) => /deferred after the application shut down/.test(w))).toHaveLength(2); // once per sink
  });

  it('delivers what a callback defers while shutdown drains (not "closed")', async () => {
    const sink = new MemorySink();
    const { logger } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [sink], shutdownTimeoutMs: 5000 }), logger);
    dispatcher.dispatch({
      kind: 'callback',
      fn: async () => {
        await new Promise((r) => setTimeout(r, 50));
        dispatcher.dispatch({ kind: 'log', level: 'info', message: 'from the callback', when: 'always', createdAt: Date.now() });
      },
      when: 'always',
      createdAt: 0,
    });
    expect(await dispatcher.shutdown()).toEqual({ drained: true, undelivered: {} });
    expect(sink.items).toEqual([expect.objectContaining({ message: 'from the callback' })]);
    expect(dispatcher.stats()).toMatchObject({ closed: 0, deadLettered: 0, delivered: 2 });
  });

  it('in inline (testing) mode too, items after shutdown are counted as closed', async () => {
    const { logger } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({}), logger, true);
    await dispatcher.shutdown();
    dispatcher.dispatch(job(1));
    expect(dispatcher.stats()).toMatchObject({ closed: 1, deadLettered: 1 });
  });

  it('a flapping sink or ever-new messages do not flood the log', async () => {
    const { logger, warnings } = quiet();
    const logs: string[] = [];
    jest.spyOn(logger, 'log').mockImplementation((m: unknown) => void logs.push(String(m)));
    let n = 0;
    const flapping = {
      name: 'flapping',
      write: async () => {
        if (++n % 2 === 0) throw new Error(`backend b-${Math.random().toString(36).slice(2)} refused`);
      },
    };
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [flapping], maxAttempts: 100, initialBackoffMs: 0, maxBackoffMs: 0, flushIntervalMs: 0 }), logger);
    for (let i = 0; i < 200; i++) {
      dispatcher.dispatch(job(i));
      await dispatcher.flush(1000);
    }
    expect(n).toBeGreaterThan(200);
    expect(warnings.filter((w) => /write failed/.test(w)).length).toBeLessThanOrEqual(3 + 9);
    expect(logs.filter((l) => /recovered/.test(l)).length).toBeLessThanOrEqual(3);
    for (let i = 0; i < 500; i++) dispatcher.dispatch({ kind: 'callback', fn: () => Promise.reject(new Error(`user error ${Math.random()} x${i}y`)), when: 'always', createdAt: 0 });
    await dispatcher.flush(1000);
    expect(warnings.filter((w) => /callback failed/.test(w)).length).toBeLessThanOrEqual(9);
  });

  it('warns at the start of each failure episode and per condition, and logs a recovery once', async () => {
    const { logger, warnings } = quiet();
    const logs: string[] = [];
    jest.spyOn(logger, 'log').mockImplementation((m: unknown) => void logs.push(String(m)));
    let failure: string | undefined = 'Redis is not connected';
    const flaky = {
      name: 'flaky',
      write: async () => {
        if (failure) throw new Error(failure);
      },
    };
    const dispatcher = new Dispatcher(
      resolveOptions({ sinks: [flaky], maxAttempts: 100, initialBackoffMs: 1, maxBackoffMs: 1 }),
      logger,
    );
    const writeWarnings = () => warnings.filter((w) => /write failed/.test(w));
    dispatcher.dispatch(job(1));
    await new Promise((r) => setTimeout(r, 30)); // many failed tries of one condition: one warning
    expect(writeWarnings()).toEqual(['Sink "flaky" write failed: Redis is not connected']);
    failure = undefined;
    await dispatcher.flush(1000);
    expect(logs.filter((l) => /recovered/.test(l))).toEqual([expect.stringMatching(/^Sink "flaky" recovered: a write succeeded after \d+ failed write\(s\)\.$/)]);

    failure = 'Redis is not connected'; // a real outage a moment later: not silenced by the one at boot
    dispatcher.dispatch(job(2));
    await new Promise((r) => setTimeout(r, 20));
    failure = 'queue "mail" is closed'; // another condition in the same episode: logged at once
    await new Promise((r) => setTimeout(r, 20));
    failure = undefined;
    await dispatcher.flush(1000);
    expect(writeWarnings()).toEqual([
      'Sink "flaky" write failed: Redis is not connected',
      'Sink "flaky" write failed: Redis is not connected',
      'Sink "flaky" write failed: queue "mail" is closed',
    ]);
    expect(logs.filter((l) => /recovered/.test(l))).toHaveLength(2);
  });
});

describe('Dispatcher with a spooled sink', () => {
  const metric = (value: number): DeferredItem => ({ kind: 'metric', name: 'm', value, when: 'always', createdAt: Date.now() });
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'dw-dispatcher-spool-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reports what the shutdown deadline left in the spool (not dead-lettered, not "undelivered"); the next dispatcher delivers it after start()', async () => {
    const logger = new Logger('test');
    const warnings: string[] = [];
    jest.spyOn(logger, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
    jest.spyOn(logger, 'log').mockImplementation(() => undefined);
    const down = { name: 'm', write: async () => Promise.reject(new Error('receiver down')) };
    // maxAttempts set (high): items stay in place, retried, rather than going to the back of the spool.
    const first = new Dispatcher(resolveOptions({ sinks: [down], spool: { dir }, maxQueueSize: 10, maxBatchSize: 5, shutdownTimeoutMs: 200, initialBackoffMs: 5, maxAttempts: 1000 }), logger);
    first.start();
    for (let n = 0; n < 40; n++) first.dispatch(metric(n));
    expect(await first.shutdown()).toEqual({ drained: false, undelivered: {}, spooled: { m: 40 } });
    expect(first.stats()).toMatchObject({ accepted: 40, pending: 40, deadLettered: 0, dropped: 0 });
    expect(first.deadLetters()).toEqual([]);
    expect(warnings.join('\n')).toMatch(/40 items undelivered in spooled sinks \(m: 40\); they stay in the spool/);

    const got: number[] = [];
    const up = { name: 'm', write: async (batch: readonly DeferredItem[]) => void got.push(...batch.map((i) => (i as { value: number }).value)) };
    const second = new Dispatcher(resolveOptions({ sinks: [up], spool: { dir }, maxQueueSize: 10, maxBatchSize: 5 }), logger);
    // Not started (the sinks are not attached yet): nothing is written, and a shutdown now does not wait for the replay.
    expect(await second.flush(50)).toBe(true);
    expect(got).toEqual([]);
    second.start();
    expect(await second.flush(5000)).toBe(true);
    expect(got).toEqual(Array.from({ length: 40 }, (_, n) => n));
    expect(second.stats().sinks.m!.spool).toMatchObject({ replayed: 40, pending: 0 });
    expect(await second.shutdown()).toEqual({ drained: true, undelivered: {}, spooled: {} });
  });
});
