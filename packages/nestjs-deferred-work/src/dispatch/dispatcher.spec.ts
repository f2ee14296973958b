import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import type { DeferredItem } from '../items/deferred-item.interface';
import { resolveOptions } from '../options/resolve-options';
import { MemorySink } from '../sinks/memory.sink';
import type { DeadLetter } from './dead-letter.interface';
import { Dispatcher } from './dispatcher';

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
  it('rejects unserialisable, oversized and malformed items with a clear message; others go through', async () => {
    const sink = new MemorySink();
    const { logger, warnings } = quiet();
    const dispatcher = new Dispatcher(resolveOptions({ sinks: [sink], maxItemBytes: 100 }), logger);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    dispatcher.dispatch(job(circular));
    dispatcher.dispatch(job({ n: 10n }));
    dispatcher.dispatch(job({ big: 'x'.repeat(200) }));
    dispatcher.dispatch({ kind: 'metric', name: 'm', value: Number.NaN, when: 'always', createdAt: 0 });
    dispatcher.dispatch(job({ fine: true }, { sink: 'nowhere' }));
    dispatcher.dispatch(job({ fine: true }));
    await dispatcher.flush(1000);
    expect(sink.items).toHaveLength(1);
    const stats = dispatcher.stats();
    expect(stats).toMatchObject({ rejected: 5, accepted: 1, delivered: 1 });
    expect(warnings.join('\n')).toMatch(/job "n" on queue "q": its data cannot be serialised to JSON \(.*circular/i);
    expect(warnings.join('\n')).toMatch(/BigInt/);
    expect(warnings.join('\n')).toMatch(/over maxItemBytes \(100\)/);
    expect(warnings.join('\n')).toMatch(/finite number/);
    expect(warnings.join('\n')).toMatch(/no sink is named "nowhere"/);
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
});
