import { BullModule, getQueueToken, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Controller, Get, Injectable, Param, Query } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { type Job, Queue } from 'bullmq';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  type DeferredStats,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  type JobItem,
  MemorySink,
} from 'nestjs-deferred-work';
import { BullSink } from 'nestjs-deferred-work/bull';
import { BullMqSink } from 'nestjs-deferred-work/bullmq';
import { eventually } from '../support/eventually';
import { identityHolds as holds, load, loadThroughOutage, range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';

/**
 * The BullMQ sink against a real, private redis-server (persistent, so that killing it loses nothing
 * it acknowledged), real queues registered with `@nestjs/bullmq`, and a real `@Processor` consuming.
 */
const QUEUE = 'mail';
const RUN = `dw-bullmq-${process.pid}-${Date.now().toString(36)}`;
let prefixes = 0;

/**
 * Jobs the app's processor ran, by job id (a job run twice shows in `runs`), and the jobs the worker
 * reported stalled and handed out again (on a loaded machine a lock can expire mid-run: one more run each).
 */
const consumed = { processed: new Map<string, Job>(), runs: 0, stalled: 0 };

// Quick stall recovery: a job Redis moved to "active" just before it was killed is handed out again soon.
@Processor(QUEUE, { concurrency: 20, lockDuration: 1000, stalledInterval: 500 })
class MailProcessor extends WorkerHost {
  async process(job: Job): Promise<void> {
    consumed.runs++;
    consumed.processed.set(String(job.id), job);
  }

  /** The worker loses its connection during the outage test; that is expected here. */
  @OnWorkerEvent('error')
  onError(): void {}

  @OnWorkerEvent('stalled')
  onStalled(): void {
    consumed.stalled++;
  }
}

@Injectable()
class NoProcessor {}

@Controller()
class JobsController {
  @Get('order/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }, { jobId: `order-${id}`, attempts: 3, backoff: { type: 'fixed', delay: 10 }, removeOnComplete: false, priority: 2 });
    return { id };
  }

  @Get('plain/:id')
  @AfterResponse()
  plain(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }, id.startsWith('poison') ? { deduplication: { id: 'poison' } } : undefined);
    return { id };
  }

  @Get('bad/:what')
  @AfterResponse()
  bad(@Param('what') what: string, @Deferred() work: DeferredScope) {
    if (what === 'colon') work.job(QUEUE, 'confirm', { id: what }, { jobId: 'order:1' });
    if (what === 'integer') work.job(QUEUE, 'confirm', { id: what }, { jobId: '42' });
    if (what === 'priority') work.job(QUEUE, 'confirm', { id: what }, { priority: 1.5 });
    if (what === 'circular') {
      const data: Record<string, unknown> = { id: what };
      data.self = data;
      work.job(QUEUE, 'confirm', data);
    }
    work.job(QUEUE, 'confirm', { id: `after-${what}` }, { jobId: `after-${what}` });
    return { what };
  }
}

/** The qualified name of the test app's queue (its prefix included), as BullMQ's `opts.parent.queue` takes it. */
let parentQueue = '';

@Controller()
class FlowController {
  /** A job, as the child of `parent` unless it is `-`, under `jobId` when one is given. */
  @Get('child/:id/:parent')
  @AfterResponse()
  child(@Param('id') id: string, @Param('parent') parent: string, @Query('jobId') jobId: string | undefined, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }, { ...(parent === '-' ? {} : { parent: { id: parent, queue: parentQueue } }), ...(jobId ? { jobId } : {}) });
    return { id };
  }

  /** Three jobs in one request (one batch): one without a parent, one whose parent comes late, one whose parent never comes. */
  @Get('family')
  @AfterResponse()
  family(@Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id: 'a' });
    work.job(QUEUE, 'confirm', { id: 'late' }, { parent: { id: 'parent-late', queue: parentQueue } });
    work.job(QUEUE, 'confirm', { id: 'orphan' }, { parent: { id: 'no-such-parent', queue: parentQueue } });
    return { ok: true };
  }
}

interface BullMqApp {
  started: StartedApp;
  work: DeferredWork;
  queue: Queue;
  prefix: string;
}

const redis = new RedisServer({ persistent: true });
const connection = () => ({ host: redis.host, port: redis.port, retryStrategy: () => 50 });

async function startBullMqApp(
  platform: Platform,
  options: { deferred?: DeferredWorkModuleOptions; process?: boolean } = {},
): Promise<BullMqApp> {
  const prefix = `${RUN}-${++prefixes}`;
  consumed.processed.clear();
  consumed.runs = 0;
  consumed.stalled = 0;
  const started = await startApp(platform, {
    imports: [
      BullModule.forRoot({ connection: connection(), prefix }),
      BullModule.registerQueue({ name: QUEUE }),
      DeferredWorkModule.forRootAsync({
        inject: [ModuleRef],
        useFactory: (moduleRef: ModuleRef) => ({ sinks: [new BullMqSink({ moduleRef }), new MemorySink()], ...options.deferred }),
      }),
    ],
    controllers: [JobsController, FlowController],
    providers: [options.process === false ? NoProcessor : MailProcessor],
  });
  const queue = started.app.get<Queue>(getQueueToken(QUEUE));
  parentQueue = `${prefix}:${QUEUE}`;
  return { started, work: started.app.get(DeferredWork), queue, prefix };
}

async function jobsIn(queue: Queue): Promise<number> {
  const c = await queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized');
  return c.waiting + c.active + c.completed + c.failed + c.delayed + c.prioritized;
}

const identityHolds = (stats: DeferredStats) => holds(stats, 'bullmq');
const notFlushed = (app: BullMqApp) => new Error(`not flushed: ${JSON.stringify(app.work.stats().sinks.bullmq)}`);

beforeAll(() => redis.start());
afterAll(() => redis.dispose());

describe.each(platforms)('BullMQ sink against a real Redis ($name)', (platform) => {
  failOnUnhandledRejection();
  let app: BullMqApp | undefined;

  afterEach(async () => {
    if (!redis.running) await redis.start();
    await app?.started.close();
    app = undefined;
  });

  it('turns N decorated requests into exactly N jobs processed once each by a real @Processor, with their options', async () => {
    app = await startBullMqApp(platform);
    const ids = range(0, 200).map(String);

    const statuses = await load(app.started.url, ids.map((id) => `/order/${id}`), 25);
    const duplicates = await load(app.started.url, ids.slice(0, 20).map((id) => `/order/${id}`), 5);

    expect([...statuses, ...duplicates].every((s) => s === 200)).toBe(true);
    if (!(await app.work.flush(10_000))) throw notFlushed(app);
    expect(app.work.stats().sinks.bullmq).toMatchObject({ accepted: 220, delivered: 220, pending: 0, dropped: 0, deadLettered: 0 });
    expect(app.work.stats().sinks.bullmq.writes).toBeLessThan(220 / 2);
    await eventually(() => expect(consumed.processed.size).toBe(200), 15_000);
    expect(await jobsIn(app.queue)).toBe(200); // each job added once (the 20 repeated ids refused by BullMQ)
    // Each job ran once, but for those the worker itself reported stalled and ran again.
    expect(consumed.runs - consumed.stalled).toBe(200);
    expect([...consumed.processed.keys()].sort()).toEqual(ids.map((id) => `order-${id}`).sort());
    expect(consumed.processed.get('order-7')!.opts).toMatchObject({ jobId: 'order-7', attempts: 3, priority: 2, backoff: { type: 'fixed', delay: 10 } });
  });

  const outageRetries = { sinkOptions: { bullmq: { maxAttempts: 80, initialBackoffMs: 50, maxBackoffMs: 250 } } };

  it('keeps answering while Redis is down mid-load, the identity holds throughout, and every job arrives after Redis is back', async () => {
    app = await startBullMqApp(platform, { deferred: outageRetries });
    const paths = range(0, 150).map((i) => `/order/${i}`);
    const { statuses, watched } = await loadThroughOutage({ url: app.started.url, paths, redis, work: app.work, sink: 'bullmq' });

    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(watched.checks).toBeGreaterThan(0);
    expect(watched.broken).toEqual([]);
    if (!(await app.work.flush(20_000))) throw notFlushed(app);
    const stats = app.work.stats();
    expect(identityHolds(stats)).toBe(true);
    expect(stats.sinks.bullmq).toMatchObject({ accepted: 150, delivered: 150, pending: 0, dropped: 0, deadLettered: 0 });
    expect(stats.sinks.bullmq.failedWrites).toBeGreaterThan(0);
    expect(await jobsIn(app.queue)).toBe(150);
    await eventually(() => expect(consumed.processed.size).toBe(150), 20_000);
  });

  it('rejects and counts bad job options and data when deferred; the other jobs go through', async () => {
    app = await startBullMqApp(platform, { process: false });
    const statuses = await load(app.started.url, ['/bad/colon', '/bad/integer', '/bad/priority', '/bad/circular'], 2);

    expect(statuses).toEqual([200, 200, 200, 200]);
    if (!(await app.work.flush(5000))) throw notFlushed(app);
    const stats = app.work.stats();
    expect(stats.rejected).toBe(4);
    expect(stats.sinks.bullmq).toMatchObject({ accepted: 4, delivered: 4, deadLettered: 0 });
    expect((await app.queue.getWaiting()).map((j) => j.id).sort()).toEqual(['after-circular', 'after-colon', 'after-integer', 'after-priority']);
  });
});

describe('BullMQ sink: a batch that half-succeeds, and confusion with the Bull sink', () => {
  failOnUnhandledRejection();
  const express = platforms[0];

  it('boots while Redis is down, answers at once, and delivers the held jobs once Redis is up', async () => {
    await redis.stop();
    let app: BullMqApp | undefined;
    try {
      const began = Date.now();
      app = await startBullMqApp(express, { process: false, deferred: { sinkOptions: { bullmq: { maxAttempts: 80, initialBackoffMs: 50, maxBackoffMs: 250 } } } });
      const bootMs = Date.now() - began;
      const statuses = await load(app.started.url, range(0, 20).map((i) => `/order/${i}`), 5);
      expect(statuses.every((s) => s === 200)).toBe(true);
      await eventually(() => expect(app!.work.stats().sinks.bullmq.failedWrites).toBeGreaterThan(0), 5000);
      expect(app.work.stats().sinks.bullmq).toMatchObject({ accepted: 20, delivered: 0, pending: 20 });
      expect(String(app.work.stats().sinks.bullmq.lastError)).toMatch(/Redis is not connected; not sending/);
      console.log(`[bullmq] booted in ${bootMs} ms with Redis down`);
      await redis.start();
      if (!(await app.work.flush(20_000))) throw notFlushed(app);
      expect(app.work.stats().sinks.bullmq).toMatchObject({ accepted: 20, delivered: 20, pending: 0, deadLettered: 0 });
      expect(await jobsIn(app.queue)).toBe(20);
    } finally {
      if (!redis.running) await redis.start();
      await app?.started.close();
    }
  });

  it('adds no job twice when addBulk fails part-way, and dead-letters at once only the job Redis refused for good (WRONGTYPE)', async () => {
    const app = await startBullMqApp(express, {
      process: false,
      deferred: { maxBatchSize: 10, flushIntervalMs: 50, sinkOptions: { bullmq: { maxAttempts: 50, initialBackoffMs: 20, maxBackoffMs: 50 } } },
    });
    try {
      // A deduplication key of the wrong type makes the add script fail for that one job, inside
      // BullMQ's pipeline: the jobs before and after it are added, and addBulk throws.
      const client = await app.queue.client;
      await client.hset(`${app.prefix}:${QUEUE}:de:poison`, { not: 'a string' });
      const statuses = await load(app.started.url, ['/plain/a', '/plain/poison', '/plain/b'], 3);
      expect(statuses).toEqual([200, 200, 200]);

      if (!(await app.work.flush(5000))) throw notFlushed(app);
      const stats = app.work.stats().sinks.bullmq;
      expect(stats).toMatchObject({ accepted: 3, delivered: 2, pending: 0, deadLettered: 1, retried: 0, lastErrorCode: 'WRONGTYPE' });
      expect(stats.lastError).toMatch(/Redis refused job "confirm" \(dw-[0-9a-f-]+\): .*WRONGTYPE/);
      expect(app.work.deadLetters()).toEqual([
        expect.objectContaining({ reason: 'not-retryable', code: 'WRONGTYPE', attempts: 1, item: expect.objectContaining({ data: { id: 'poison' } }) }),
      ]);
      const waiting = await app.queue.getWaiting();
      expect(waiting.map((j) => (j.data as { id: string }).id).sort()).toEqual(['a', 'b']); // added once each, though their pipeline failed
      expect(waiting.every((j) => /^dw-[0-9a-f-]{36}$/.test(String(j.id)))).toBe(true); // the items' own ids
    } finally {
      await app.started.close();
    }
  });

  it('a job whose parent is not in Redis is retried, never counted added, and dead-lettered when its attempts run out; one whose jobId exists under another parent at once', async () => {
    const app = await startBullMqApp(express, {
      process: false,
      deferred: { maxBatchSize: 10, flushIntervalMs: 50, sinkOptions: { bullmq: { maxAttempts: 3, initialBackoffMs: 20, maxBackoffMs: 50 } } },
    });
    try {
      await app.queue.add('parent', {}, { jobId: 'parent-1' });
      await app.queue.add('parent', {}, { jobId: 'parent-2' });
      await app.queue.add('confirm', { id: 'first' }, { jobId: 'taken-1', parent: { id: 'parent-2', queue: parentQueue } });
      const statuses = await load(app.started.url, ['/child/a/-', '/child/orphan/no-such-parent', '/child/kid/parent-1', '/child/taken/parent-1?jobId=taken-1'], 4);
      expect(statuses).toEqual([200, 200, 200, 200]);

      if (!(await app.work.flush(5000))) throw notFlushed(app);
      const stats = app.work.stats().sinks.bullmq;
      expect(stats).toMatchObject({ accepted: 4, delivered: 2, pending: 0, deadLettered: 2, retried: 2 });
      const letters = app.work.deadLetters();
      expect(letters).toHaveLength(2);
      expect(letters).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ reason: 'attempts-exhausted', code: 'ParentJobNotExist', attempts: 3, item: expect.objectContaining({ data: { id: 'orphan' } }) }),
          expect.objectContaining({ reason: 'not-retryable', code: 'ParentJobCannotBeReplaced', attempts: 1, item: expect.objectContaining({ data: { id: 'taken' } }) }),
        ]),
      );
      expect(String(letters.find((l) => l.code === 'ParentJobNotExist')?.error)).toMatch(/BullMQ did not add job "confirm" \(dw-[0-9a-f-]+\): its parent job is not in Redis \(yet\).*Missing key for parent job .*no-such-parent/);
      const waiting = await app.queue.getWaiting();
      expect(waiting.map((j) => (j.data as { id?: string }).id ?? j.name).sort()).toEqual(['a', 'first', 'kid', 'parent', 'parent']);
      expect(waiting.find((j) => (j.data as { id?: string }).id === 'kid')?.parentKey).toBe(`${parentQueue}:parent-1`);
    } finally {
      await app.started.close();
    }
  });

  it('through addBulk (a client the sink cannot cork): the job whose parent arrives late is added on a retry, the orphan dead-lettered, none counted added before it was', async () => {
    const prefix = `${RUN}-bulk`;
    const queue = new Queue(QUEUE, { connection: connection(), prefix });
    let bulkCalls = 0;
    // The queue as the sink sees one on a Cluster or another backend: no client to cork, so addBulk.
    const bare = {
      name: QUEUE,
      add: (name: string, data: unknown, opts: object) => queue.add(name, data, opts),
      addBulk: (jobs: Parameters<Queue['addBulk']>[0]) => (bulkCalls++, queue.addBulk(jobs)),
      waitUntilReady: () => queue.waitUntilReady(),
    };
    const app = await startBullMqApp(express, {
      process: false,
      deferred: {
        sinks: [new BullMqSink({ queues: [bare as never] }), new MemorySink()],
        sinkOptions: { bullmq: { maxAttempts: 4, initialBackoffMs: 200, maxBackoffMs: 200 } },
      },
    });
    parentQueue = `${prefix}:${QUEUE}`;
    try {
      expect(await load(app.started.url, ['/family'], 1)).toEqual([200]);
      await eventually(() => expect(app.work.stats().sinks.bullmq.retried).toBeGreaterThan(0), 5000);
      expect(bulkCalls).toBe(1);
      expect(app.work.stats().sinks.bullmq).toMatchObject({ accepted: 3, delivered: 1 }); // the two children are not counted
      await queue.add('parent', {}, { jobId: 'parent-late' });

      if (!(await app.work.flush(10_000))) throw notFlushed(app);
      expect(app.work.stats().sinks.bullmq).toMatchObject({ accepted: 3, delivered: 2, pending: 0, deadLettered: 1 });
      expect(app.work.deadLetters()).toEqual([
        expect.objectContaining({ reason: 'attempts-exhausted', code: 'ParentJobNotExist', attempts: 4, item: expect.objectContaining({ data: { id: 'orphan' } }) }),
      ]);
      const waiting = await queue.getWaiting();
      expect(waiting.map((j) => (j.data as { id?: string }).id ?? j.name).sort()).toEqual(['a', 'late', 'parent']);
      expect(waiting.find((j) => (j.data as { id?: string }).id === 'late')?.parentKey).toBe(`${parentQueue}:parent-late`);
    } finally {
      await app.started.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it("BullMQ's addBulk (how the sink adds jobs through a client it cannot cork, e.g. a Cluster's) answers such a job with an error code for its id", async () => {
    // What BullMqSink reads the addBulk path's outcome by: the job is not added, yet addBulk resolves.
    const queue = new Queue(QUEUE, { connection: connection(), prefix: `${RUN}-codes` });
    try {
      const jobs = await queue.addBulk([
        { name: 'a', data: {}, opts: { jobId: 'code-a' } },
        { name: 'orphan', data: {}, opts: { jobId: 'code-orphan', parent: { id: 'no-such-parent', queue: `${RUN}-codes:${QUEUE}` } } },
      ]);
      expect(jobs.map((j) => j.id)).toEqual(['code-a', -5]);
      expect(await queue.getJobCountByTypes('waiting')).toBe(1);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('the link dies after Redis added 5 of 10 jobs: the write cut by its signal keeps the 5 confirmed, only the 5 unanswered fail (retryable), and nothing is sent after the cut', async () => {
    const proxy = new TcpProxy(redis.port);
    await proxy.listen();
    const queue = new Queue(QUEUE, { connection: { host: proxy.host, port: proxy.port, maxRetriesPerRequest: null }, prefix: `${RUN}-cut` });
    const sink = new BullMqSink({ queues: { [QUEUE]: queue } });
    const job = (i: number): JobItem => ({ kind: 'job', queue: QUEUE, name: 'n', data: { i }, when: 'always', createdAt: Date.now(), id: `dw-cut-${i}` });
    try {
      await sink.attach(sinkAttachContext());
      expect(await sink.write([job(100)], { signal: new AbortController().signal, attempt: 1 })).toBeUndefined(); // connected, the script loaded
      proxy.passAnswers(10); // 5 replies of two lines each ($<length>, then the job id)
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('write timed out')), 1500);
      const result = await sink.write(range(0, 10).map(job), { signal: controller.signal, attempt: 1 });
      expect(result?.failed).toHaveLength(5);
      expect(result!.failed!.some((f) => f.retryable === false)).toBe(false); // retried
      await proxy.blackhole.off();
      await eventually(async () => expect(await jobsIn(queue)).toBe(11), 5_000); // all ten were added while the replies were held
      const retried = result!.failed!.map((f) => job(f.index));
      expect(await sink.write(retried, { signal: new AbortController().signal, attempt: 2 })).toBeUndefined(); // the five unanswered, sent again
      expect(await jobsIn(queue)).toBe(11); // found by their jobId: nothing added twice
    } finally {
      await proxy.blackhole.off();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await proxy.close();
    }
  });

  it('BullSink given @nestjs/bullmq queues fails at bootstrap, naming BullMqSink', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        BullModule.forRoot({ connection: connection(), prefix: `${RUN}-confused` }),
        BullModule.registerQueue({ name: QUEUE }),
        DeferredWorkModule.forRootAsync({
          inject: [ModuleRef],
          useFactory: (ref: ModuleRef) => ({ sinks: [new BullSink({ moduleRef: ref }), new MemorySink()] }),
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication(express.adapter() as never, { logger: false });
    try {
      await expect(app.init()).rejects.toThrow(
        /the queue registered as BullQueue_mail is a BullMQ queue \(@nestjs\/bullmq\); use BullMqSink from 'nestjs-deferred-work\/bullmq'/,
      );
    } finally {
      await moduleRef.get<Queue>(getQueueToken(QUEUE)).close();
      await app.close().catch(() => undefined);
    }
  });
});
