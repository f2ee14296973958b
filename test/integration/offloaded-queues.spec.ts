import { Controller, Get, Param } from '@nestjs/common';
import Bull from 'bull';
import { Queue as BullMqQueue } from 'bullmq';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  type DeferredSink,
} from 'nestjs-deferred-work';
import { BullSink } from 'nestjs-deferred-work/bull';
import { BullMqSink, unpackJob } from 'nestjs-deferred-work/bullmq';
import { identityHolds, load, loadThroughOutage, range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * `BullSink.offloaded()` and `BullMqSink.offloaded()` against a real, private redis-server
 * (persistent, so the counts can be exact): the worker thread creates its own queues from plain
 * options, Redis goes down and comes back mid-load, and exactly the jobs deferred end up in Redis —
 * Bull by the job ids given, BullMQ by the ids fixed on the request thread (none given), so that a
 * batch retried after an outage cannot add a job twice.
 */
const QUEUE = 'mail';
const RUN = `dw-offload-${process.pid}-${Date.now().toString(36)}`;
let prefixes = 0;

@Controller()
class JobsController {
  @Get('bull/:id')
  @AfterResponse()
  bull(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }, { jobId: `order-${id}` });
    return { id };
  }

  @Get('bullmq/:id')
  @AfterResponse()
  bullmq(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }); // no jobId: the sink fixes one per item
    return { id };
  }

  @Get('elsewhere/:id')
  @AfterResponse()
  elsewhere(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('not-offloaded', 'confirm', { id });
    return { id };
  }
}

const redis = new RedisServer({ persistent: true });
const OUTAGE: DeferredWorkModuleOptions = { flushIntervalMs: 2, shutdownTimeoutMs: 10_000 };
const retries = (sink: string) => ({ sinkOptions: { [sink]: { maxAttempts: 80, initialBackoffMs: 50, maxBackoffMs: 250 } } });

interface Flavour {
  sink: string;
  make(prefix: string): DeferredSink;
  /** The `data.id` of every job in the queue (any state), read with the library itself. */
  jobIds(prefix: string): Promise<string[]>;
}

const flavours: Flavour[] = [
  {
    sink: 'bull',
    make: (prefix) => BullSink.offloaded({ redis: { host: redis.host, port: redis.port }, queues: [QUEUE], prefix }),
    async jobIds(prefix) {
      const queue = new Bull(QUEUE, { redis: { host: redis.host, port: redis.port }, prefix });
      try {
        return (await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed'])).map((job) => (job.data as { id: string }).id);
      } finally {
        await queue.close();
      }
    },
  },
  {
    sink: 'bullmq',
    make: (prefix) => BullMqSink.offloaded({ connection: `redis://${redis.host}:${redis.port}`, queues: [QUEUE], prefix }),
    async jobIds(prefix) {
      const queue = new BullMqQueue(QUEUE, { connection: { host: redis.host, port: redis.port }, prefix });
      try {
        return (await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized'])).map((job) => (job.data as { id: string }).id);
      } finally {
        await queue.close();
      }
    },
  },
];

beforeAll(() => redis.start());
afterAll(() => redis.dispose());
failOnUnhandledRejection();

describe.each(platforms)('offloaded queue sinks against a real Redis ($name)', (platform: Platform) => {
  let started: StartedApp | undefined;

  afterEach(async () => {
    if (!redis.running) await redis.start();
    await started?.close();
    started = undefined;
  });

  it.each(flavours)('$sink: answers through a Redis outage; exactly the jobs deferred are in Redis afterwards, once each', async (flavour) => {
    const prefix = `${RUN}-${++prefixes}`;
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ ...OUTAGE, ...retries(flavour.sink), sinks: [flavour.make(prefix)] })],
      controllers: [JobsController],
    });
    const work = started.app.get(DeferredWork);
    const ids = range(0, 150).map(String);
    const { statuses, watched } = await loadThroughOutage({ url: started.url, paths: ids.map((id) => `/${flavour.sink}/${id}`), redis, work, sink: flavour.sink });

    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(watched.broken).toEqual([]);
    expect(await work.flush(20_000)).toBe(true);
    const stats = work.stats();
    expect(identityHolds(stats, flavour.sink)).toBe(true);
    expect(stats.sinks[flavour.sink]).toMatchObject({ accepted: 150, delivered: 150, pending: 0, dropped: 0, deadLettered: 0 });
    expect(stats.sinks[flavour.sink].failedWrites).toBeGreaterThan(0);
    expect(stats.sinks[flavour.sink].host).toMatchObject({ thread: 'worker', restarts: 0 });
    expect((await flavour.jobIds(prefix)).sort()).toEqual([...ids].sort());
  });

  it('bullmq with packJobs: the worker thread’s sink packs the jobs; every item is in Redis once, in packs', async () => {
    const prefix = `${RUN}-${++prefixes}`;
    const sink = BullMqSink.offloaded({ connection: `redis://${redis.host}:${redis.port}`, queues: [QUEUE], prefix, packJobs: { maxItems: 8 } });
    started = await startApp(platform, { imports: [DeferredWorkModule.forRoot({ flushIntervalMs: 20, sinks: [sink] })], controllers: [JobsController] });
    const work = started.app.get(DeferredWork);
    const ids = range(0, 120).map(String);
    expect((await load(started.url, ids.map((id) => `/bullmq/${id}`), 20)).every((s) => s === 200)).toBe(true);
    expect(await work.flush(10_000)).toBe(true);
    expect(work.stats().sinks.bullmq).toMatchObject({ accepted: 120, delivered: 120, pending: 0, dropped: 0, deadLettered: 0 });

    const queue = new BullMqQueue(QUEUE, { connection: { host: redis.host, port: redis.port }, prefix });
    try {
      const jobs = await queue.getJobs(['waiting']);
      const items = jobs.flatMap((job) => unpackJob<{ id: string }>(job));
      expect(items.map((item) => item.data.id).sort()).toEqual([...ids].sort());
      expect(new Set(items.map((item) => item.id)).size).toBe(120);
      expect(jobs.filter((job) => String(job.id).startsWith('dw-pack-')).length).toBeGreaterThan(0);
      expect(Math.max(...jobs.map((job) => unpackJob(job).length))).toBeLessThanOrEqual(8);
    } finally {
      await queue.close();
    }
  });

  it.each(flavours)('$sink: a job for a queue the worker does not have is rejected (and counted) on the request thread when deferred', async (flavour) => {
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ ...OUTAGE, sinks: [flavour.make(`${RUN}-${++prefixes}`)], deadLetter: () => undefined })],
      controllers: [JobsController],
    });
    const work = started.app.get(DeferredWork);
    expect(await load(started.url, ['/elsewhere/1'], 1)).toEqual([200]);
    expect(await work.flush(5000)).toBe(true);
    expect(work.stats()).toMatchObject({ rejected: 1, accepted: 0 });
  });
});
