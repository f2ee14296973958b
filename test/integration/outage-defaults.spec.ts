import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DeferredWork } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { EVERY_SINK, EverySinkDestinations, tally } from '../support/every-sink';
import { loadAtRate } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';

/**
 * With the defaults, a 60-second outage of every destination at once costs latency, not data: one app
 * defers to SqlSink on PostgreSQL and on MariaDB, the Redis Streams sink, the BullMQ sink, the HTTP
 * sink and the SQS sink (each destination behind a proxy that resets and refuses its connections),
 * under 100 requests a second; the destinations come back on the same ports. Every response is 2xx,
 * every item is delivered at least once by its mark — exactly once where the sink deduplicates (SQL,
 * BullMQ) — with no dead letter and nothing dropped. Printed (not asserted): each sink's drain time
 * after the return, and the process's peak RSS growth. On Express and Fastify.
 */
failOnUnhandledRejection();
const OUTAGE_MS = Number(process.env.DW_OUTAGE_MS ?? 60_000);
const RATE = 100;
const BEFORE_MS = 5_000;
const AFTER_MS = 5_000;
const destinations = new EverySinkDestinations();

beforeAll(async () => {
  await destinations.start();
}, 60_000);
afterAll(async () => {
  await destinations.dispose();
});

describe.each(platforms)('every sink with its defaults through a %s outage of every destination ($name)'.replace('%s', `${OUTAGE_MS / 1000}-s`), (platform) => {
  it(`${RATE} requests/s: every response 2xx, every item delivered, none dead-lettered or dropped`, async () => {
    const opened = await destinations.open();
    const started = await startApp(platform, opened.metadata);
    const work = started.app.get(DeferredWork);
    const marks: string[] = [];
    const rss = { base: 0, peak: 0 };
    const drained: Record<string, number> = {};
    let upAt = 0;
    const sampler = setInterval(() => {
      rss.peak = Math.max(rss.peak, process.memoryUsage().rss);
      if (upAt === 0) return;
      for (const [name, s] of Object.entries(work.stats().sinks)) if (EVERY_SINK.includes(name as never) && drained[name] === undefined && s.outageSince === undefined) drained[name] = Date.now() - upAt;
    }, 100);
    const inFlightAtOutage: Record<string, number> = {};
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    try {
      const total = ((BEFORE_MS + OUTAGE_MS + AFTER_MS) / 1000) * RATE;
      const load = loadAtRate(started.url, RATE, BEFORE_MS + OUTAGE_MS + AFTER_MS, (i) => {
        const mark = `${platform.name}-${i}`;
        marks.push(mark);
        return `/order/${mark}`;
      });
      await new Promise((resolve) => setTimeout(resolve, BEFORE_MS));
      for (const [name, s] of Object.entries(work.stats().sinks)) inFlightAtOutage[name] = s.inFlight;
      rss.base = rss.peak = process.memoryUsage().rss;
      await destinations.down();
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
      const during = work.stats();
      await destinations.up();
      upAt = Date.now();
      const statuses = await load;
      loop.disable();
      console.log(`[outage ${platform.name}] event loop delay p99 ${Math.round(loop.percentile(99) / 1e6)} ms, max ${Math.round(loop.max / 1e6)} ms`);
      expect(statuses).toHaveLength(total);
      expect(statuses.filter((s) => s < 200 || s >= 300)).toEqual([]);
      // The outage was felt by every sink, each with its code.
      for (const name of EVERY_SINK) {
        expect(during.sinks[name].failedWrites).toBeGreaterThan(0);
        expect(during.sinks[name].lastErrorCode).toBeDefined();
      }
      await eventually(async () => {
        for (const name of EVERY_SINK) expect(work.stats().sinks[name]).toMatchObject({ accepted: total, pending: 0 });
      }, 120_000);
      const stats = work.stats();
      expect({ deadLettered: stats.deadLettered, dropped: stats.dropped }).toEqual({ deadLettered: 0, dropped: 0 });
      const read = await opened.read();
      const lines: string[] = [];
      for (const name of EVERY_SINK) {
        const { missing, duplicates } = tally(read[name], marks);
        expect({ name, missing }).toEqual({ name, missing: [] });
        if (name === 'pg' || name === 'maria' || name === 'bullmq') expect({ name, duplicates }).toEqual({ name, duplicates: 0 });
        // Others may write twice what was in flight when the links dropped (a reply lost with the connection).
        else expect(duplicates).toBeLessThanOrEqual(Math.max(inFlightAtOutage[name], work.stats().sinks[name].failedWrites > 0 ? 512 : 0));
        lines.push(`${name}: ${read[name].length} entries for ${marks.length} marks, ${duplicates} duplicate(s), drained ${drained[name] ?? '?'} ms after the return, ${stats.sinks[name].failedWrites} failed writes, last code ${during.sinks[name].lastErrorCode} (${during.sinks[name].lastError})`);
      }
      console.log(`[outage ${OUTAGE_MS / 1000} s, ${platform.name}] ${total} requests, ${RATE}/s, peak RSS growth ${Math.round((rss.peak - rss.base) / 1_048_576)} MiB\n  ${lines.join('\n  ')}`);
    } finally {
      clearInterval(sampler);
      await started.close();
      await opened.close();
    }
  }, OUTAGE_MS + 240_000);
});
