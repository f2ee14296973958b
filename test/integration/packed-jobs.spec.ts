import { BullModule, getQueueToken, Processor, WorkerHost } from '@nestjs/bullmq';
import { Controller, Get, Param } from '@nestjs/common';
import { type Job, Queue } from 'bullmq';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { BullMqSink, unpackJob } from 'nestjs-deferred-work/bullmq';
import { eventually } from '../support/eventually';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * `packJobs` end to end: decorated requests, a BullMqSink packing a write's jobs of one name into one
 * BullMQ job, a private redis-server, and a real `@Processor` reading every job with `unpackJob`.
 */
const QUEUE = 'telemetry';
const MAX_ITEMS = 16;
const RUN = `dw-packed-${process.pid}-${Date.now().toString(36)}`;
let prefixes = 0;

/** What the worker saw: each job once (by its id, with how many items it held), each item by its id. */
const seen = { jobs: new Map<string, number>(), items: new Map<string, { data: { n: string }; runs: number }>() };

@Processor(QUEUE, { concurrency: 20 })
class TelemetryProcessor extends WorkerHost {
  async process(job: Job): Promise<void> {
    const items = unpackJob<{ n: string }>(job);
    seen.jobs.set(String(job.id), items.length);
    for (const { id, data } of items) {
      const entry = seen.items.get(id);
      if (entry) entry.runs++;
      else seen.items.set(id, { data, runs: 1 });
    }
  }
}

@Controller()
class EventsController {
  @Get('event/:n')
  @AfterResponse()
  event(@Param('n') n: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'event', { n });
    // every tenth request also defers a job with options of its own: never packed
    if (Number(n) % 10 === 0) work.job(QUEUE, 'event', { n: `p${n}` }, { jobId: `prio-${n}`, priority: 3 });
    return { n };
  }
}

const redis = new RedisServer();
beforeAll(() => redis.start());
afterAll(() => redis.dispose());

describe.each(platforms)('BullMqSink with packJobs against a real Redis and @Processor ($name)', (platform) => {
  failOnUnhandledRejection();

  it('N deferred jobs reach the worker once each, packed at most maxItems to a job; jobs with options of their own go alone', async () => {
    seen.jobs.clear();
    seen.items.clear();
    const prefix = `${RUN}-${++prefixes}`;
    const started = await startApp(platform, {
      imports: [
        BullModule.forRoot({ connection: { host: redis.host, port: redis.port }, prefix }),
        BullModule.registerQueue({ name: QUEUE }),
        DeferredWorkModule.forRoot({ sinks: [new BullMqSink({ packJobs: { maxItems: MAX_ITEMS } })], sinkOptions: { bullmq: { flushIntervalMs: 20 } } }),
      ],
      controllers: [EventsController],
      providers: [TelemetryProcessor],
    });
    try {
      const ns = range(0, 300).map(String);
      const statuses = await load(started.url, ns.map((n) => `/event/${n}`), 25);
      expect(statuses.every((s) => s === 200)).toBe(true);

      const work = started.app.get(DeferredWork);
      expect(await work.flush(10_000)).toBe(true);
      expect(work.stats().sinks.bullmq).toMatchObject({ accepted: 330, delivered: 330, pending: 0, dropped: 0, deadLettered: 0 });
      await eventually(() => expect(seen.items.size).toBe(330), 15_000);

      // every item once, with its data
      expect([...seen.items.values()].every((entry) => entry.runs === 1)).toBe(true);
      expect(new Set([...seen.items.values()].map((entry) => entry.data.n))).toEqual(new Set([...ns, ...ns.filter((n) => Number(n) % 10 === 0).map((n) => `p${n}`)]));
      // packed: far fewer jobs than items, none over maxItems; the 30 with options alone, under their own ids
      const queue = started.app.get<Queue>(getQueueToken(QUEUE));
      const counts = await queue.getJobCounts('completed', 'waiting', 'active', 'failed', 'prioritized');
      const jobs = counts.completed + counts.waiting + counts.active + counts.failed + counts.prioritized;
      expect(jobs).toBe(seen.jobs.size);
      expect(jobs).toBeLessThan(30 + 300 / 2);
      expect(Math.max(...seen.jobs.values())).toBeLessThanOrEqual(MAX_ITEMS);
      expect([...seen.jobs.values()].some((size) => size > 1)).toBe(true);
      for (const n of ['0', '150', '290']) expect(seen.jobs.get(`prio-${n}`)).toBe(1);
      const packs = [...seen.jobs.keys()].filter((id) => id.startsWith('dw-pack-'));
      expect(packs.length).toBeGreaterThan(0);
    } finally {
      await started.close();
    }
  });
});
