import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { DeferredItem, SinkItem } from '../../core/items/deferred-item.interface';
import { resolveOptions } from '../../nest/options/resolve-options';
import { MemorySink } from '../../sinks/memory/memory.sink';
import { Dispatcher } from '../dispatcher';
import type { WriteObserver } from './write-observer';

const quiet = () => {
  const logger = new Logger('test');
  jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
  jest.spyOn(logger, 'error').mockImplementation(() => undefined);
  return logger;
};
const item = (kind: 'job' | 'log', extra: Partial<DeferredItem> = {}): DeferredItem =>
  (kind === 'job'
    ? { kind, queue: 'q', name: 'n', data: {}, when: 'always', createdAt: 0, ...extra }
    : { kind, level: 'info', message: 'm', when: 'always', createdAt: 0, ...extra }) as DeferredItem;

/** Records what the dispatcher tells it. */
function recorder(lag = true): WriteObserver & { writes: unknown[][]; lags: Array<[string, string]> } {
  const writes: unknown[][] = [];
  const lags: Array<[string, string]> = [];
  return {
    writes,
    lags,
    wrote: (...args) => void writes.push(args),
    delivered: lag ? (sink, kind, ms) => void (expect(ms).toBeGreaterThanOrEqual(0), lags.push([sink, kind])) : undefined,
  };
}

describe('counts by kind and the write observer', () => {
  it('counts each sink by item kind, adding up to its totals', async () => {
    let calls = 0;
    // Fails the first write (retryable), then refuses the job "bad" for good.
    const picky = {
      name: 'picky',
      write: async (batch: SinkItem[]) => {
        if (calls++ === 0) throw new SinkWriteError('down', { retryable: true });
        const failed = batch.flatMap((it, index) => (it.kind === 'job' && (it.data as { bad?: boolean }).bad ? [{ index, error: new SinkWriteError('bad', { retryable: false }) }] : []));
        return { failed };
      },
    };
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [picky], initialBackoffMs: 1, maxBackoffMs: 1 }), quiet());
    dispatcher.dispatch(item('job'));
    dispatcher.dispatch(item('job', { data: { bad: true } } as Partial<DeferredItem>));
    dispatcher.dispatch(item('log'));
    expect(await dispatcher.flush(2000)).toBe(true);
    const kinds = dispatcher.kindCounts().picky;
    expect(kinds).toEqual({
      job: { accepted: 2, delivered: 1, dropped: 0, deadLettered: 1, retried: 2 },
      log: { accepted: 1, delivered: 1, dropped: 0, deadLettered: 0, retried: 1 },
    });
    const totals = dispatcher.stats().sinks.picky;
    for (const key of ['accepted', 'delivered', 'dropped', 'deadLettered', 'retried'] as const) expect(kinds.job[key] + kinds.log[key]).toBe(totals[key]);
  });

  it('tells an observer of every write and delivery once set, and nothing after it stopped', async () => {
    const sink = new MemorySink();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [sink] }), quiet());
    dispatcher.dispatch(item('job'));
    await dispatcher.flush(1000);
    const first = recorder();
    const second = recorder(false);
    const stopFirst = dispatcher.observeWrites(first);
    dispatcher.observeWrites(second);
    dispatcher.dispatch(item('job'));
    dispatcher.dispatch(item('log'));
    await dispatcher.flush(1000);
    expect(first.writes).toEqual([['memory', expect.any(Number), 2, 0, undefined]]);
    expect(second.writes).toEqual(first.writes);
    expect(first.lags).toEqual([['memory', 'job'], ['memory', 'log']]);
    stopFirst();
    dispatcher.dispatch(item('job'));
    await dispatcher.flush(1000);
    expect(first.writes).toHaveLength(1);
    expect(second.writes).toHaveLength(2);
  });
});
