import { Controller, Get, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkHealthIndicator, DeferredWorkModule, HttpSink } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { loadAtRate } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { useProxiedReceiver } from '../support/tcp-proxy';

/**
 * Readiness means one thing through a 20-s outage of an HTTP receiver (its connections reset and
 * refused by a proxy), under steady load, with the sink's default retries (a probe every 0–5 s): with
 * `failingForMs` 1,500, `isReady` turns down about 1.5 s into the outage and stays down,
 * at every probe, until the backlog has drained — although the retry gap is often longer than 1.5 s;
 * with 60,000 it stays up throughout. Both read from the same app at the same moments.
 */
failOnUnhandledRejection();
const OUTAGE_MS = 20_000;

@Controller()
class EntriesController {
  @Get('entries/:mark')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'entry', { mark });
    return { mark };
  }
}

describe.each(platforms)('readiness through a 20-s outage ($name)', (platform) => {
  const link = useProxiedReceiver();

  it('failingForMs 1,500: down from ~1.5 s after the first failure until drained, never up between; 60,000: up throughout', async () => {
    const started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [new HttpSink({ url: `http://127.0.0.1:${link.proxy.port}/ready-${process.pid}` })] })],
      controllers: [EntriesController],
    });
    const work = started.app.get(DeferredWork);
    const health = started.app.get(DeferredWorkHealthIndicator);
    const probes: Array<{ at: number; short: string; long: string; failedWrites: number; pending: number; state?: string }> = [];
    const probe = () => {
      const s = work.stats().sinks.http;
      probes.push({
        at: Date.now(),
        short: health.isReady('deferredWork', { failingForMs: 1500 }).deferredWork.status,
        long: health.isReady('deferredWork', { failingForMs: 60_000 }).deferredWork.status,
        failedWrites: s.failedWrites,
        pending: s.pending,
        state: s.state,
      });
    };
    const timer = setInterval(probe, 250);
    try {
      const load = loadAtRate(started.url, 50, OUTAGE_MS + 8_000, (i) => `/entries/r-${i}`);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const stoppedAt = Date.now();
      await link.proxy.stop();
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
      await link.proxy.start();
      const upAt = Date.now();
      expect((await load).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks.http).toMatchObject({ pending: 0, state: 'up' }), 30_000);
      probe();
      const firstFailure = probes.find((p) => p.failedWrites > 0)!.at;
      const drainedAt = probes.find((p) => p.at > upAt && p.state === 'up')!.at;
      const turnedDown = probes.find((p) => p.short === 'down')!.at;
      // Down about 1.5 s into the outage: after a failed write, or a write in flight, that has lasted
      // failingForMs (a write cut by the outage can stay in flight a while before it fails: then readiness
      // turns down before the first failure is counted). Probes are 250 ms apart; a busy machine adds some.
      expect(turnedDown - stoppedAt).toBeGreaterThanOrEqual(1000);
      expect(turnedDown - stoppedAt).toBeLessThanOrEqual(3500);
      // Then down at every probe until the backlog drained: no flapping with the retry gap.
      const between = probes.filter((p) => p.at >= turnedDown && p.at < drainedAt - 250);
      expect(between.length).toBeGreaterThan(60);
      expect(between.filter((p) => p.short !== 'down')).toEqual([]);
      expect(probes.filter((p) => p.at > drainedAt + 500).every((p) => p.short === 'up')).toBe(true);
      // With 60 s it never turned down: the outage was shorter.
      expect(probes.filter((p) => p.long !== 'up')).toEqual([]);
      expect(work.stats().sinks.http).toMatchObject({ deadLettered: 0, dropped: 0 });
      console.log(`[readiness, ${platform.name}] down ${turnedDown - stoppedAt} ms into the outage (first failed write counted at ${firstFailure - stoppedAt} ms), for ${between.length} probes in a row, drained ${drainedAt - upAt} ms after the return`);
    } finally {
      clearInterval(timer);
      await started.close();
    }
  }, 90_000);
});
