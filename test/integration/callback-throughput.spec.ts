import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import { Dispatcher } from '../../packages/nestjs-deferred-work/src/pipeline/dispatcher';
import { resolveOptions } from '../../packages/nestjs-deferred-work/src/nest/options/resolve-options';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The callback runner with its defaults against loads the batch processor could not carry: it ran
 * callbacks 512 at a time, one batch in flight, so 25 ms callbacks topped out near 20,000/s and one
 * slow callback stalled the next 500.
 */
describe('callback runner under load, with default options (in-process, no HTTP)', () => {
  let warnings: string[];
  let logger: Logger;
  beforeEach(() => {
    logger = new Logger('test');
    warnings = [];
    jest.spyOn(logger, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
  });

  /**
   * Defers `total` callbacks at up to `perSecond`: on every timer tick, what is due since the last
   * one, but never more than 10 ms' worth at once — a busy machine (CI runs suites in parallel) then
   * offers less, rather than one burst of thousands in a single turn. Returns the rate offered.
   */
  async function drive(dispatcher: Dispatcher, total: number, perSecond: number, fn: (i: number) => () => unknown) {
    const started = performance.now();
    const most = perSecond / 100;
    let sent = 0;
    let last = started;
    while (sent < total) {
      const now = performance.now();
      const due = Math.min(total - sent, Math.floor(((now - last) / 1000) * perSecond), most);
      if (due > 0) last = now;
      for (let i = 0; i < due; i++, sent++) dispatcher.dispatch({ kind: 'callback', fn: fn(sent), when: 'always', createdAt: Date.now() });
      await sleep(1);
    }
    return (total / (performance.now() - started)) * 1000;
  }

  it('25 ms callbacks at 40,000/s: none dropped, all run', async () => {
    const dispatcher = new Dispatcher(resolveOptions(), logger);
    let done = 0;
    const rate = await drive(dispatcher, 60_000, 40_000, () => async () => {
      await sleep(25);
      done++;
    });
    expect(await dispatcher.flush(10_000)).toBe(true);
    const stats = dispatcher.stats();
    console.log(`[callback-throughput] offered ${Math.round(rate)} callbacks/s`);
    expect(stats.sinks.callbacks).toMatchObject({ accepted: 60_000, delivered: 60_000, dropped: 0, deadLettered: 0, pending: 0 });
    expect(done).toBe(60_000);
    expect(warnings.filter((w) => /queue is full/.test(w))).toEqual([]);
  }, 30_000);

  it('a slow tail (every 1000th callback takes 1 s) at 10,000/s: none dropped, all run', async () => {
    const dispatcher = new Dispatcher(resolveOptions(), logger);
    let done = 0;
    await drive(dispatcher, 20_000, 10_000, (i) => async () => {
      await sleep(i % 1000 === 999 ? 1000 : 5);
      done++;
    });
    expect(await dispatcher.flush(10_000)).toBe(true);
    expect(dispatcher.stats().sinks.callbacks).toMatchObject({ accepted: 20_000, delivered: 20_000, dropped: 0, pending: 0 });
    expect(done).toBe(20_000);
    expect(dispatcher.stats().callbacks.slowest[0].ms).toBeGreaterThanOrEqual(990);
  }, 30_000);
});
