import { Controller, Get } from '@nestjs/common';
import autocannon from 'autocannon';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork } from 'nestjs-deferred-work';
import { failOnUnhandledRejection, platforms, useMemoryApp } from '../support/platforms';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Callbacks started and finished, across the app (reset per test). */
const effects = { started: 0, finished: 0 };

@Controller()
class TailController {
  /** A 5 ms remote call deferred per request; every 1000th takes 1 s (a slow upstream). */
  @Get('tail')
  @AfterResponse()
  tail(@Deferred() work: DeferredScope) {
    const n = ++effects.started;
    work.run(async () => {
      await sleep(n % 1000 === 0 ? 1000 : 5);
      effects.finished++;
    });
    return { n };
  }

  /** Every 100th callback hangs and ignores its signal; the rest take 2 ms. */
  @Get('hang')
  @AfterResponse()
  hang(@Deferred() work: DeferredScope) {
    const n = ++effects.started;
    work.run(async () => {
      if (n % 100 === 0) await new Promise(() => undefined);
      await sleep(2);
      effects.finished++;
    });
    return { n };
  }
}

/** Sends `amount` GETs over `connections` keep-alive connections (autocannon, 127.0.0.1 only). */
async function load(url: string, amount: number, connections: number) {
  const result = await autocannon({ url, amount, connections, timeout: 10 });
  return { ok: result['2xx'], other: result.non2xx + result.errors + result.timeouts, rps: result.requests.average };
}

describe.each(platforms)('nothing lost under a slow tail ($name)', (platform) => {
  failOnUnhandledRejection();
  beforeEach(() => {
    effects.started = 0;
    effects.finished = 0;
  });

  describe('with default options', () => {
    const ctx = useMemoryApp(platform, {}, { controllers: [TailController] });

    it('6,000 requests at 20 connections, every 1000th callback taking 1 s: every callback completes, none dropped', async () => {
      const sent = await load(`${ctx.started.url}/tail`, 6000, 20);
      expect(sent).toMatchObject({ ok: 6000, other: 0 });
      const work = ctx.started.app.get(DeferredWork);
      expect(await work.settled(10_000)).toBe(true);
      const { callbacks, sinks } = work.stats();
      console.log(`[slow-tail ${platform.name}] ${Math.round(sent.rps)} req/s; slowest callbacks ${callbacks.slowest.map((s) => Math.round(s.ms)).join(', ')} ms`);
      expect(sinks.callbacks).toMatchObject({ accepted: 6000, delivered: 6000, dropped: 0, deadLettered: 0, pending: 0 });
      expect(effects.finished).toBe(6000);
      expect(callbacks.slowest.filter((s) => s.ms >= 990)).toHaveLength(5); // the six slow calls ran (five kept)
    }, 30_000);
  });

  describe('with callbacks.timeoutMs 300', () => {
    const ctx = useMemoryApp(platform, { callbacks: { timeoutMs: 300 } }, { controllers: [TailController] });

    it('callbacks that ignore their signal are dead-lettered as timed out without blocking the others', async () => {
      const sent = await load(`${ctx.started.url}/hang`, 1000, 20);
      expect(sent.ok).toBe(1000);
      const work = ctx.started.app.get(DeferredWork);
      expect(await work.settled(5000)).toBe(true);
      const stats = work.stats();
      expect(stats.sinks.callbacks).toMatchObject({ accepted: 1000, delivered: 990, deadLettered: 10, dropped: 0, pending: 0 });
      expect(stats.callbacks).toMatchObject({ timedOut: 10, overdue: 10, finishedLate: 0, running: 0 });
      expect(work.deadLetters().map((l) => l.reason)).toEqual(Array(10).fill('timeout'));
      expect(effects.finished).toBe(990);
    }, 30_000);
  });
});
