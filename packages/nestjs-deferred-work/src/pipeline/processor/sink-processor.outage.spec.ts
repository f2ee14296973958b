import type { DeferredItem } from '../../core/items/deferred-item.interface';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { jest } from '@jest/globals';
import { item, ok, setup, useFakeClock, type WriteFn } from '../../../../../test/support/processor-harness';
import { QueueBudget, TotalQueueBytes } from './queue-budget';

/** The name of a test item (a metric). */
const nameOf = (i: DeferredItem) => (i as { name?: string }).name;

/** A connection refused, as Node's `net` reports it. */
function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' });
}

/** A sink that is down (every write refused) while `down()` says so, with every write's time and items. */
function outageSink(down: () => boolean) {
  const writes: Array<{ at: number; items: DeferredItem[]; failed: boolean }> = [];
  const write: WriteFn = async (batch) => {
    const failed = down();
    writes.push({ at: Date.now(), items: [...batch], failed });
    if (failed) throw refused();
  };
  return { write, writes };
}

describe('SinkProcessor with its defaults through an outage', () => {
  beforeEach(() => useFakeClock(true));
  afterEach(() => useFakeClock(false));

  it('a 4-minute outage costs latency, not data: one probe at a time, backoff at most 5 s, every item delivered once', async () => {
    let down = true;
    const { write, writes } = outageSink(() => down);
    // The dispatcher's defaults: no attempts cap, a 5-minute budget, backoff from 100 ms to 5 s.
    const { processor, letters, identity } = setup(write, { initialBackoffMs: 100, maxBackoffMs: 5000, maxBatchSize: 10 });
    const started = Date.now();
    for (let i = 0; i < 50; i++) processor.enqueue(item(i));
    // Items keep coming while the sink is down: they wait behind the probe.
    for (let s = 0; s < 240; s += 10) {
      await jest.advanceTimersByTimeAsync(10_000);
      for (let i = 0; i < 5; i++) processor.enqueue(item(1000 + s * 10 + i));
      if (s === 120) {
        const mid = processor.stats();
        expect(mid.state).toBe('probing');
        expect(mid.outageSince).toBe(started);
        expect(mid.lastErrorCode).toBe('ECONNREFUSED');
        expect(mid.deadLettered).toBe(0);
      }
    }
    down = false;
    expect(await processor.flush(Date.now() + 60_000)).toBe(true);
    const failed = writes.filter((w) => w.failed);
    // Every failed write was the same probe: the oldest batch, and nothing else.
    const probe = failed[0]!.items.map((i) => nameOf(i));
    for (const w of failed) expect(w.items.map((i) => nameOf(i))).toEqual(probe);
    for (let i = 1; i < failed.length; i++) expect(failed[i]!.at - failed[i - 1]!.at).toBeLessThanOrEqual(5000);
    // With full jitter up to 5 s, about one probe each 2.5 s over 240 s; the attempts are not what ends the retries.
    expect(failed.length).toBeGreaterThan(50);
    expect(letters).toEqual([]);
    const names = writes.filter((w) => !w.failed).flatMap((w) => w.items.map((i) => nameOf(i)));
    expect(new Set(names).size).toBe(names.length);
    expect(identity()).toMatchObject({ accepted: 170, delivered: 170, pending: 0, deadLettered: 0, dropped: 0 });
  });

  it('an outage past maxRetryDurationMs dead-letters what waited that long as expired, with the error code, and delivers the rest', async () => {
    let down = true;
    const { write } = outageSink(() => down);
    const { processor, letters, identity } = setup(write, { maxRetryDurationMs: 2000, initialBackoffMs: 100, maxBackoffMs: 500, maxBatchSize: 5 });
    for (let i = 0; i < 12; i++) processor.enqueue(item(i));
    await jest.advanceTimersByTimeAsync(2600);
    // Items deferred late in the outage keep their own budget.
    for (let i = 100; i < 103; i++) processor.enqueue(item(i));
    await jest.advanceTimersByTimeAsync(1000);
    down = false;
    await processor.flush(Date.now() + 10_000);
    expect(letters.map((l) => nameOf(l.item)).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `m${i}`).sort());
    for (const letter of letters) {
      expect(letter).toMatchObject({ reason: 'expired', code: 'ECONNREFUSED', error: 'connect ECONNREFUSED 127.0.0.1:5432' });
      expect(letter.attempts).toBeGreaterThanOrEqual(1);
    }
    // The probe batch was tried many times; those that waited behind it once each.
    expect(letters.filter((l) => l.attempts > 1).length).toBe(5);
    expect(identity()).toMatchObject({ accepted: 15, delivered: 3, deadLettered: 12, deadLetteredByReason: { expired: 12 } });
  });

  it('a permanent failure is dead-lettered at once; maxAttempts, when set, caps the tries', async () => {
    const permanent = setup(async () => {
      throw new SinkWriteError('value too long', { retryable: false, code: '22001' });
    });
    permanent.processor.enqueue(item(1));
    await permanent.processor.flush(Date.now() + 1000);
    expect(permanent.letters).toMatchObject([{ reason: 'not-retryable', attempts: 1, code: '22001' }]);

    const capped = setup(async () => {
      throw refused();
    }, { maxAttempts: 3 });
    capped.processor.enqueue(item(2));
    await capped.processor.flush(Date.now() + 10_000);
    expect(capped.letters).toMatchObject([{ reason: 'attempts-exhausted', attempts: 3, code: 'ECONNREFUSED' }]);
  });

  it('a write that goes through in part is not an outage: its transient failures lead the next batch instead of holding the others', async () => {
    let first = true;
    const { processor, batches, identity } = setup(async (batch) => {
      // The first write refuses its first item (a throttled entry); every later one takes everything.
      if (!first) return undefined;
      first = false;
      return { failed: [{ index: 0, error: Object.assign(new Error('throttled'), { code: 'ThrottlingException' }) }] };
    }, { maxBatchSize: 3, flushIntervalMs: 10, initialBackoffMs: 60_000, maxBackoffMs: 60_000 });
    for (let i = 0; i < 3; i++) processor.enqueue(item(i));
    await jest.advanceTimersByTimeAsync(5);
    expect(processor.stats()).toMatchObject({ state: 'up', delivered: 2, pending: 1, lastErrorCode: 'ThrottlingException' });
    for (let i = 3; i < 5; i++) processor.enqueue(item(i));
    // No 60-s backoff: the refused item lingers like a new one and goes out with the next batch, first.
    await jest.advanceTimersByTimeAsync(30);
    expect(batches.map((b) => b.map((i) => nameOf(i)))).toEqual([['m0', 'm1', 'm2'], ['m0', 'm3', 'm4']]);
    expect(identity()).toMatchObject({ accepted: 5, delivered: 5, pending: 0, retried: 1 });
  });

  it('states: up, probing while down, draining the backlog after it came back (outageSince kept), then up', async () => {
    let down = false;
    let hold: (() => void) | undefined;
    const { processor } = setup(async () => {
      if (down) throw refused();
      // Once back, each write waits to be let go: the backlog drains one batch at a time.
      await new Promise<void>((resolve) => (hold = resolve));
    }, { maxBatchSize: 2, initialBackoffMs: 100, maxBackoffMs: 200 });
    expect(processor.stats()).toMatchObject({ state: 'up' });
    expect(processor.stats().outageSince).toBeUndefined();
    down = true;
    for (let i = 0; i < 6; i++) processor.enqueue(item(i));
    await jest.advanceTimersByTimeAsync(1000);
    const since = processor.stats().outageSince;
    expect(processor.stats()).toMatchObject({ state: 'probing' });
    expect(since).toBeDefined();
    down = false;
    await jest.advanceTimersByTimeAsync(300);
    hold!();
    await jest.advanceTimersByTimeAsync(1);
    expect(processor.stats()).toMatchObject({ state: 'draining', outageSince: since, pending: 4 });
    while (processor.stats().pending > 0) {
      hold?.();
      await jest.advanceTimersByTimeAsync(1);
    }
    expect(processor.stats().state).toBe('up');
    expect(processor.stats().outageSince).toBeUndefined();
  });
});

describe('SinkProcessor at the shutdown deadline', () => {
  beforeEach(() => useFakeClock(true));
  afterEach(() => useFakeClock(false));

  it('the items of a write still in flight are dead-lettered shutdown-in-flight (they may have been delivered), those never sent shutdown', async () => {
    // On real timers (300 ms): the fake clock, run by flush() inside shutdown() as well, may reach the
    // write's own timeout first. Every write hangs until its signal aborts: the first batch is in flight
    // at the deadline.
    useFakeClock(false);
    const { processor, letters, identity } = setup((_batch, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))), {
      maxBatchSize: 3,
      writeTimeoutMs: 60_000,
    });
    for (let i = 0; i < 7; i++) processor.enqueue(item(i));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(processor.stats().inFlight).toBe(3);
    expect(await processor.shutdown(Date.now() + 300)).toBe(7);
    const reasons = letters.map((l) => `${nameOf(l.item)}:${l.reason}`);
    expect(reasons.slice(0, 3).sort()).toEqual(['m0:shutdown-in-flight', 'm1:shutdown-in-flight', 'm2:shutdown-in-flight']);
    expect(reasons.slice(3).every((r) => r.endsWith(':shutdown'))).toBe(true);
    expect(processor.deadLetteredFor('shutdown-in-flight')).toBe(3);
    expect(identity()).toMatchObject({ accepted: 7, deadLettered: 7, deadLetteredByReason: { 'shutdown-in-flight': 3, shutdown: 4 } });
  });
});

describe('SinkProcessor byte budget', () => {
  beforeEach(() => useFakeClock(true));
  afterEach(() => useFakeClock(false));

  it('past maxQueueBytes the newest items are dropped (queue-full) and counted, the state says refusing; nothing else is lost', async () => {
    let down = true;
    const { write } = outageSink(() => down);
    // Each item counts its payload's estimate plus 256 bytes: 20 items of ~300 bytes fit in 6,000.
    const budget = new QueueBudget(6000, Number.POSITIVE_INFINITY, new TotalQueueBytes(Number.POSITIVE_INFINITY));
    const { processor, letters, identity } = setup(write, { initialBackoffMs: 10, maxBackoffMs: 50 }, budget);
    const payload = 40;
    let queued = 0;
    for (let i = 0; i < 30; i++) if (processor.enqueue(item(i), payload)) queued++;
    expect(queued).toBe(20);
    const full = processor.stats();
    expect(full).toMatchObject({ state: 'refusing', dropped: 10, droppedByReason: { 'queue-full': 10 }, heldBytes: 20 * (payload + 256) });
    expect(full.refusingSince).toBeDefined();
    down = false;
    await processor.flush(Date.now() + 5000);
    expect(letters).toEqual([]);
    expect(identity()).toMatchObject({ accepted: 30, delivered: 20, dropped: 10, pending: 0, heldBytes: 0, state: 'up' });
  });

  it('maxTotalQueueBytes bounds what the sinks hold together', async () => {
    const total = new TotalQueueBytes(3000);
    const a = setup(async () => {
      throw refused();
    }, { initialBackoffMs: 1000 }, new QueueBudget(1_000_000, Number.POSITIVE_INFINITY, total));
    const b = setup(async () => {
      throw refused();
    }, { initialBackoffMs: 1000 }, new QueueBudget(1_000_000, Number.POSITIVE_INFINITY, total));
    let queued = 0;
    for (let i = 0; i < 6; i++) if (a.processor.enqueue(item(i), 244)) queued++; // 500 bytes each
    for (let i = 0; i < 6; i++) if (b.processor.enqueue(item(i), 244)) queued++;
    // Six fill the total; a sink holding nothing still takes one item (a sink is never starved by another).
    expect(queued).toBe(7);
    expect(total.held).toBe(3500);
    expect(a.processor.stats().dropped + b.processor.stats().dropped).toBe(5);
    expect(b.processor.stats()).toMatchObject({ state: 'refusing', dropped: 5 });
    a.processor.shutdown(Date.now());
    b.processor.shutdown(Date.now());
  });

  it('maxQueueSize, when set, caps the count too', async () => {
    const { processor } = setup(ok, { maxQueueSize: 3, flushIntervalMs: 60_000, maxBatchSize: 3 });
    let queued = 0;
    for (let i = 0; i < 5; i++) if (processor.enqueue(item(i))) queued++;
    expect(queued).toBe(3);
    expect(processor.stats()).toMatchObject({ dropped: 2, droppedByReason: { 'queue-full': 2 } });
    await processor.flush(Date.now() + 1000);
  });
});
