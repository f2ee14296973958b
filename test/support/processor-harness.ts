import type { DeferredItem } from '../../packages/nestjs-deferred-work/src/core/items/deferred-item.interface';
import type { DeferredSink, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../packages/nestjs-deferred-work/src/core/sink.interface';
import { PROCESSOR_DEFAULTS } from '../../packages/nestjs-deferred-work/src/pipeline/defaults';
import type { DeadLetter } from '../../packages/nestjs-deferred-work/src/core/dead-letter.interface';
import { SinkProcessor } from '../../packages/nestjs-deferred-work/src/pipeline/processor/sink-processor';
import type { QueueBudget } from '../../packages/nestjs-deferred-work/src/pipeline/processor/queue-budget';
import { expect, jest } from '@jest/globals';

/**
 * What the processor specs share: a sink that records its batches around a write function, a
 * `SinkProcessor` on it with short backoffs, its dead letters and warnings, the accounting identity,
 * and a fake clock that `flush()` and `shutdown()` run until they settle.
 */
export const item = (n: number): DeferredItem => ({ kind: 'metric', name: `m${n}`, value: n, when: 'always', createdAt: Date.now() });

export type WriteFn = (batch: readonly DeferredItem[], ctx: SinkWriteContext) => Promise<void | SinkWriteResult>;

export function setup(write: WriteFn, options: Partial<SinkProcessorOptions> = {}, budget?: QueueBudget) {
  const batches: DeferredItem[][] = [];
  const letters: DeadLetter[] = [];
  const failures: string[] = [];
  const sums: number[][] = []; // [accepted, delivered + pending + dropped + deadLettered] seen inside the hooks
  const sink: DeferredSink = {
    name: 'test',
    write: (batch, ctx) => {
      batches.push([...batch]);
      return write(batch, ctx);
    },
  };
  const processor = new SinkProcessor(
    sink,
    { ...PROCESSOR_DEFAULTS, flushIntervalMs: 1, initialBackoffMs: 1, maxBackoffMs: 5, ...options },
    {
      deadLetter: (l) => {
        letters.push(...l);
        const st = processor.stats();
        sums.push([st.accepted, st.delivered + st.pending + st.dropped + st.deadLettered]);
      },
      writeFailed: (_s, m) => failures.push(m),
    },
    undefined,
    budget,
  );
  // On fake timers, flush() and shutdown() run the clock until they settle (see drive()).
  const flush = processor.flush.bind(processor);
  const shutdown = processor.shutdown.bind(processor);
  processor.flush = (deadline) => drive(flush(deadline));
  processor.shutdown = (deadline) => drive(shutdown(deadline));
  const identity = () => {
    const s = processor.stats();
    expect(s.accepted).toBe(s.delivered + s.pending + s.dropped + s.deadLettered);
    return s;
  };
  return { processor, batches, letters, failures, identity, sums };
}

export const ok: WriteFn = async () => undefined;
/** A sink's write taking `ms` (on the fake clock, except in the one test on real timers). */
export const later = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Whether the test runs on Jest's fake timers: every test but one does. `setImmediate` (which starts
 * an export), `setTimeout` (linger, write timeout, grace, backoff, flush deadlines) and `Date.now()`
 * are all faked, and nothing here does real I/O, so every run takes the same steps.
 */
let fake = false;

/** Puts the processor tests on Jest's fake timers (`true`: `setImmediate`, `setTimeout` and `Date.now()` faked) or back on real ones. */
export function useFakeClock(on: boolean): void {
  if (on) jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
  else jest.useRealTimers();
  fake = on;
}

/**
 * Runs the fake clock to its next timer, again and again, until `promise` settles. Before each timer
 * the microtasks queued so far run (the `...Async` timer functions yield to the event loop), so
 * the processor sees time pass exactly as it would in real time, only without waiting for it.
 * On real timers it hands back the very same promise (no extra microtask turns).
 */
export function drive<T>(promise: Promise<T>): Promise<T> {
  return fake ? runClockUntilSettled(promise) : promise;
}

async function runClockUntilSettled<T>(promise: Promise<T>): Promise<T> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let steps = 0; !settled; steps++) {
    if (steps === 10_000) throw new Error('still pending after 10000 timers');
    await jest.advanceTimersToNextTimerAsync();
  }
  return promise;
}

