import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Get, Param } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkHealthIndicator, DeferredWorkModule, type DeferredWorkModuleOptions, HttpSink } from 'nestjs-deferred-work';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { eventually } from '../support/eventually';
import { load, loadAtRate, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';
import { useProxiedReceiver } from '../support/tcp-proxy';

/**
 * The time and byte budgets with real destinations:
 * - a private, persistent redis-server stopped for 4 minutes (0.8 of the default 5-minute retry
 *   budget) under load, with the Redis Streams sink on its defaults: nothing dead-lettered, every
 *   entry in the stream once;
 * - the same outage outlasting a shortened budget: what waited is dead-lettered `expired`, with the
 *   connection's error code;
 * - the HTTP sink with a small byte budget filled by an outage: exactly the items past the budget
 *   dropped and counted, readiness down, the rest delivered; with a spool, nothing dropped.
 */
failOnUnhandledRejection();
const LONG_OUTAGE_MS = Number(process.env.DW_LONG_OUTAGE_MS ?? 240_000);
let n = 0;

@Controller()
class EntriesController {
  @Get('entries/:mark')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'entry', { mark, note: 'x'.repeat(200) });
    return { mark };
  }
}

const entryMark = (fields: string[]) => (JSON.parse(fields[fields.indexOf('payload') + 1]!) as { fields: { mark: string } }).fields.mark;

describe('RedisStreamSink with its defaults through a long Redis outage (Fastify)', () => {
  const redis = new RedisServer({ persistent: true });
  let admin: Redis;
  beforeAll(async () => {
    await redis.start();
    admin = new Redis({ host: redis.host, port: redis.port, retryStrategy: () => 100, maxRetriesPerRequest: null });
    admin.on('error', () => undefined);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.dispose();
  });

  async function appWith(stream: string, extra: Partial<DeferredWorkModuleOptions> = {}) {
    // The app's client as the docs show it: its 'error' listener, retrying the connection.
    const client = new Redis({ host: redis.host, port: redis.port });
    client.on('error', () => undefined);
    const started = await startApp(platforms[1], {
      imports: [DeferredWorkModule.forRoot({ sinks: [new RedisStreamSink({ client, stream })], ...extra })],
      controllers: [EntriesController],
    });
    return { started, client, work: started.app.get(DeferredWork) };
  }

  it(`a ${LONG_OUTAGE_MS / 1000}-s outage (0.8 of the default budget) under load: no dead letter, every entry once`, async () => {
    const stream = `dw-long-${process.pid}-${++n}`;
    const { started, client, work } = await appWith(stream);
    try {
      const rate = 20;
      const marks: string[] = [];
      const load = loadAtRate(started.url, rate, LONG_OUTAGE_MS + 10_000, (i) => {
        marks.push(`long-${i}`);
        return `/entries/long-${i}`;
      });
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      await redis.stop();
      const downAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, LONG_OUTAGE_MS));
      const during = work.stats().sinks['redis-streams'];
      await redis.start();
      const upAt = Date.now();
      const statuses = await load;
      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(during).toMatchObject({ state: 'probing', deadLettered: 0, dropped: 0 });
      expect(during.lastErrorCode).toBeDefined();
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: marks.length, delivered: marks.length, pending: 0 }), 60_000);
      const drainedMs = Date.now() - upAt;
      const entries = (await admin.xrange(stream, '-', '+')).map(([, fields]) => entryMark(fields));
      expect(new Set(entries).size).toBe(marks.length);
      expect(entries.length - marks.length).toBeLessThanOrEqual(500); // a write in flight when Redis went away, at most
      const s = work.stats().sinks['redis-streams'];
      expect({ deadLettered: s.deadLettered, dropped: s.dropped }).toEqual({ deadLettered: 0, dropped: 0 });
      console.log(
        `[long outage] ${Math.round((upAt - downAt) / 1000)} s down, ${marks.length} entries at ${rate}/s, ${during.pending} held at the end of the outage (${Math.round((during.heldBytes ?? 0) / 1024)} KiB), ` +
          `${s.failedWrites} failed writes (probes), drained ${drainedMs} ms after the return, ${entries.length - marks.length} duplicate(s), code ${during.lastErrorCode}`,
      );
    } finally {
      await started.close();
      client.disconnect();
    }
  }, LONG_OUTAGE_MS + 120_000);

  it('an outage past a shortened budget: what waited is dead-lettered expired, with the error code; the rest delivered once Redis is back', async () => {
    const stream = `dw-expired-${process.pid}-${++n}`;
    const { started, client, work } = await appWith(stream, { maxRetryDurationMs: 3000, deadLetterCapacity: 1000 });
    try {
      expect((await load(started.url, ['/entries/warm'], 1)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks['redis-streams'].delivered).toBe(1));
      await redis.stop();
      expect((await load(started.url, range(0, 30).map((i) => `/entries/lost-${i}`), 5)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks['redis-streams'].deadLettered).toBe(30), 20_000);
      const letters = work.deadLetters().filter((l) => l.sink === 'redis-streams');
      expect(letters).toHaveLength(30);
      for (const letter of letters) {
        expect(letter.reason).toBe('expired');
        expect(letter.code).toMatch(/^(ECONNREFUSED|ENOTCONN|ECONNRESET)$/);
        if (letter.attempts > 1) expect(letter.firstError?.code).toBeDefined();
      }
      await redis.start();
      expect((await load(started.url, ['/entries/after'], 1)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 32, delivered: 2, deadLettered: 30, pending: 0 }), 20_000);
      console.log(`[expired] 30 dead letters, codes ${[...new Set(letters.map((l) => l.code))].join(', ')}, attempts ${Math.min(...letters.map((l) => l.attempts))}–${Math.max(...letters.map((l) => l.attempts))}`);
    } finally {
      await started.close();
      client.disconnect();
    }
  }, 60_000);
});

describe.each(platforms)('HttpSink with a small byte budget through an outage ($name)', (platform) => {
  const link = useProxiedReceiver();
  let spoolDir: string | undefined;
  afterEach(() => {
    if (spoolDir) rmSync(spoolDir, { recursive: true, force: true });
    spoolDir = undefined;
  });

  async function run(spooled: boolean) {
    const path = `/budget-${process.pid}-${++n}`;
    // Each entry counts its payload (~240 bytes) + 256: 40 KiB hold about 80 of them.
    const maxQueueBytes = 40 * 1024;
    if (spooled) spoolDir = mkdtempSync(join(tmpdir(), 'dw-budget-spool-'));
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new HttpSink({ url: `http://127.0.0.1:${link.proxy.port}${path}` })],
          sinkOptions: { http: { maxQueueBytes, ...(spooled ? { spool: { dir: spoolDir! } } : {}) } },
        }),
      ],
      controllers: [EntriesController],
    });
    const work = started.app.get(DeferredWork);
    const health = started.app.get(DeferredWorkHealthIndicator);
    try {
      await link.proxy.stop();
      const marks = range(0, 200).map((i) => `b-${i}`);
      expect((await load(started.url, marks.map((m) => `/entries/${m}`), 10)).every((s) => s === 200)).toBe(true);
      const full = work.stats().sinks.http;
      const ready = health.isReady('deferredWork', { failingForMs: 60_000 }).deferredWork;
      await link.proxy.start();
      await eventually(async () => expect(work.stats().sinks.http).toMatchObject({ accepted: 200, pending: 0 }), 30_000);
      const s = work.stats().sinks.http;
      const received = link.receiver.delivered(path).map((item) => (item as { fields: { mark: string } }).fields.mark);
      return { full, ready, s, received, marks };
    } finally {
      await started.close();
    }
  }

  it('without a spool: the items past the budget dropped and counted exactly, readiness down, the rest delivered', async () => {
    const { full, ready, s, received, marks } = await run(false);
    expect(full.state).toBe('refusing');
    expect(full.dropped).toBeGreaterThan(0);
    expect(full.heldBytes).toBeLessThanOrEqual(40 * 1024);
    expect(ready.status).toBe('down');
    expect(ready.reasons.join('\n')).toMatch(/dropped/);
    expect(s).toMatchObject({ delivered: 200 - full.dropped, dropped: full.dropped, deadLettered: 0, droppedByReason: { 'queue-full': full.dropped } });
    expect(new Set(received).size).toBe(200 - full.dropped);
    // The first ones were held, the newest dropped.
    expect(received.slice().sort()).toEqual(marks.slice(0, 200 - full.dropped).sort());
    console.log(`[byte budget, ${platform.name}] 200 deferred, ${200 - full.dropped} held in ${full.heldBytes} bytes, ${full.dropped} dropped`);
  }, 60_000);

  it('with a spool: the overflow waits on disk, nothing dropped, every item delivered', async () => {
    const { full, s, received } = await run(true);
    expect(full.dropped).toBe(0);
    expect(s).toMatchObject({ delivered: 200, dropped: 0, deadLettered: 0 });
    expect(new Set(received).size).toBe(200);
  }, 60_000);
});
