import { BullModule, getQueueToken } from '@nestjs/bull';
import { Controller, Get, Param } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import Bull, { type Job, type Queue } from 'bull';
import {
  type SinkWriteError,
  AfterResponse,
  Deferred,
  type DeferredScope,
  type DeferredStats,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
} from 'nestjs-deferred-work';
import { BullSink, type BullSinkOptions } from 'nestjs-deferred-work/bull';
import { eventually } from '../support/eventually';
import { identityHolds as holds, load, loadThroughOutage, range, watchIdentity as watch } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * The Bull sink against a real, private redis-server (persistent, so that killing it loses nothing
 * it acknowledged and the counts below can be exact), real Bull queues registered with
 * `@nestjs/bull`, and a real `queue.process` consuming the jobs.
 */

const QUEUE = 'mail';
const RUN = `dw-bull-${process.pid}-${Date.now().toString(36)}`;
let prefixes = 0;

@Controller()
class JobsController {
  @Get('order/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }, {
      jobId: `order-${id}`,
      attempts: 3,
      backoff: { type: 'fixed', delay: 10 },
      removeOnComplete: false,
      removeOnFail: 10,
    });
    return { id };
  }

  @Get('plain/:id')
  @AfterResponse()
  plain(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job(QUEUE, 'confirm', { id }, id === 'poison' ? { debounce: { id: 'poison' } } : undefined);
    return { id };
  }

  @Get('bad/:what')
  @AfterResponse()
  bad(@Param('what') what: string, @Deferred() work: DeferredScope) {
    if (what === 'circular') {
      const data: Record<string, unknown> = { id: 'circular' };
      data.self = data;
      work.job(QUEUE, 'confirm', data);
    } else if (what === 'bigint') {
      work.job(QUEUE, 'confirm', { id: 'bigint', n: 10n });
    } else if (what === 'huge') {
      work.job(QUEUE, 'confirm', { id: 'huge', blob: 'x'.repeat(4096) });
    }
    work.job(QUEUE, 'confirm', { id: `after-${what}` }, { jobId: `after-${what}` });
    return { what };
  }
}

interface BullApp {
  started: StartedApp;
  work: DeferredWork;
  queue: Queue;
  prefix: string;
  /** Jobs the test's processor ran, by job id (a job run twice would show in `runs`). */
  processed: Map<string, Job>;
  runs: number;
}

const redis = new RedisServer({ persistent: true });
// disconnectTimeout: ioredis keeps a 2 s timer per closed connection whose socket it could not end
// cleanly (Redis already dead); a short one lets Jest exit at once.
const redisOptions = () => ({ host: redis.host, port: redis.port, retryStrategy: () => 50, disconnectTimeout: 100 });

async function startBullApp(
  platform: Platform,
  options: { deferred?: DeferredWorkModuleOptions; sink?: Partial<BullSinkOptions>; process?: boolean } = {},
): Promise<BullApp> {
  const prefix = `${RUN}-${++prefixes}`;
  const started = await startApp(platform, {
    imports: [
      // Quick reconnects and stall recovery, so that the outage cases take seconds: a job Redis moved to
      // "active" just before it was killed (the reply lost) is handed out again once its lock expires.
      BullModule.forRoot({
        redis: redisOptions(),
        prefix,
        settings: { retryProcessDelay: 50, lockDuration: 1000, stalledInterval: 500 },
      }),
      BullModule.registerQueue({ name: QUEUE }),
      DeferredWorkModule.forRootAsync({
        inject: [ModuleRef],
        useFactory: (moduleRef: ModuleRef) => ({
          sinks: [new BullSink({ moduleRef, ...options.sink })],
          ...options.deferred,
        }),
      }),
    ],
    controllers: [JobsController],
  });
  const queue = started.app.get<Queue>(getQueueToken(QUEUE));
  const bullApp: BullApp = { started, work: started.app.get(DeferredWork), queue, prefix, processed: new Map(), runs: 0 };
  if (options.process !== false) {
    void queue.process('confirm', 20, async (job: Job) => {
      bullApp.runs++;
      bullApp.processed.set(String(job.id), job);
    });
  }
  return bullApp;
}

/** The app's queue as the sink sees one on a client without a socket of its own (a Cluster's): addBulk, one MULTI. */
function bareQueue(queue: Queue, calls: { addBulk: number; add?: number }) {
  return {
    name: queue.name,
    client: { status: 'ready' },
    add: (name: string, data: unknown, opts?: object) => ((calls.add = (calls.add ?? 0) + 1), queue.add(name, data, opts)),
    addBulk: (jobs: Parameters<Queue['addBulk']>[0]) => (calls.addBulk++, queue.addBulk(jobs)),
    isReady: () => queue.isReady(),
  };
}

/** A Bull queue of the test's own on an app's prefix, to look at Redis after the app closed. */
async function inspect<T>(prefix: string, look: (queue: Queue) => Promise<T>): Promise<T> {
  const queue = new Bull(QUEUE, { redis: redisOptions(), prefix });
  try {
    return await look(queue);
  } finally {
    await queue.close();
  }
}

/** Jobs in a queue, whatever their state. */
async function jobsIn(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts();
  return counts.waiting + counts.active + counts.completed + counts.failed + counts.delayed;
}

/** The accounting identity, for the totals and the Bull sink. */
const identityHolds = (stats: DeferredStats) => holds(stats, 'bull');
const watchIdentity = (work: DeferredWork, during: Promise<unknown>) => watch(work, during, 'bull');

beforeAll(() => redis.start());
afterAll(() => redis.dispose());

describe.each(platforms)('Bull sink against a real Redis ($name)', (platform) => {
  failOnUnhandledRejection();
  let app: BullApp | undefined;

  afterEach(async () => {
    if (!redis.running) await redis.start();
    await app?.started.close();
    app = undefined;
  });

  it('turns N decorated requests into exactly N jobs, with data and options, in few writes; a duplicate jobId is not added twice', async () => {
    app = await startBullApp(platform);
    const ids = range(0, 200).map(String);

    const statuses = await load(app.started.url, ids.map((id) => `/order/${id}`), 25);
    const duplicates = await load(app.started.url, ids.slice(0, 20).map((id) => `/order/${id}`), 5);

    expect([...statuses, ...duplicates].every((s) => s === 200)).toBe(true);
    expect(await app.work.flush(10_000)).toBe(true);
    const stats = app.work.stats();
    expect(stats.sinks.bull).toMatchObject({ accepted: 220, delivered: 220, pending: 0, dropped: 0, deadLettered: 0 });
    expect(stats.sinks.bull.writes).toBeLessThan(220 / 2);
    const counts = await eventually(async () => {
      const c = await app!.queue.getJobCounts();
      expect(c.completed).toBe(200);
      return c;
    }, 10_000);
    expect(counts).toMatchObject({ waiting: 0, active: 0, delayed: 0, failed: 0, completed: 200 });
    expect(app.runs).toBe(200);
    expect([...app.processed.keys()].sort()).toEqual(ids.map((id) => `order-${id}`).sort());
    const job = app.processed.get('order-7')!;
    expect(job.name).toBe('confirm');
    expect(job.data).toEqual({ id: '7' });
    expect(job.opts).toMatchObject({
      jobId: 'order-7',
      attempts: 3,
      backoff: { type: 'fixed', delay: 10 },
      removeOnComplete: false,
      removeOnFail: 10,
    });
  });

  /**
   * Retries every ≤ 250 ms, 80 times (a budget of about 10 s): the outage below lasts a second or two,
   * and once Redis is back the held items go out within a retry's wait, whatever the machine's load.
   */
  const outageRetries = { sinkOptions: { bull: { maxAttempts: 80, initialBackoffMs: 50, maxBackoffMs: 250 } } };

  it('keeps answering while Redis is down mid-load, holds the items, and delivers them all after Redis is back', async () => {
    app = await startBullApp(platform, { deferred: outageRetries });
    const pendingWhileDown: number[] = [];

    const { statuses, watched } = await loadThroughOutage({
      url: app.started.url,
      paths: range(0, 150).map((i) => `/order/${i}`),
      redis,
      work: app.work,
      sink: 'bull',
      whileDown: () => pendingWhileDown.push(app!.work.stats().pending),
    });

    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(watched.checks).toBeGreaterThan(0);
    expect(watched.broken).toEqual([]);
    // While Redis was down, responses went on and items piled up in the buffer (the handler never awaits Redis).
    expect(Math.max(0, ...pendingWhileDown)).toBeGreaterThan(0);

    const flushed = await app.work.flush(20_000);
    if (!flushed) throw new Error(`not flushed: ${JSON.stringify({ bull: app.work.stats().sinks.bull, redis: app.queue.client.status })}`);
    const stats = app.work.stats();
    expect(identityHolds(stats)).toBe(true);
    expect(stats.sinks.bull).toMatchObject({ accepted: 150, delivered: 150, pending: 0, dropped: 0, deadLettered: 0 });
    expect(stats.sinks.bull.failedWrites).toBeGreaterThan(0);
    expect(await jobsIn(app.queue)).toBe(150);
    await eventually(() => expect(app!.processed.size).toBe(150), 15_000);
    expect([...app.processed.keys()].sort()).toEqual(range(0, 150).map((i) => `order-${i}`).sort());
  });

  it('after Redis lost its script cache (a restart does that; here SCRIPT FLUSH), adds every job at the first write, once each', async () => {
    app = await startBullApp(platform, { process: false });
    expect(await load(app.started.url, ['/order/warm'], 1)).toEqual([200]);
    expect(await app.work.flush(10_000)).toBe(true);
    const before = app.work.stats().sinks.bull;
    // Single adds: ioredis answers NOSCRIPT by loading the script and sending the command again.
    expect(await redis.command('SCRIPT', 'FLUSH')).toBe('+OK');
    const ids = range(0, 50).map(String);
    expect((await load(app.started.url, ids.map((id) => `/order/${id}`), 10)).every((s) => s === 200)).toBe(true);
    expect(await app.work.flush(10_000)).toBe(true);
    const after = app.work.stats().sinks.bull;
    expect({ delivered: after.delivered - before.delivered, failedWrites: after.failedWrites - before.failedWrites, deadLettered: after.deadLettered }).toEqual({
      delivered: 50,
      failedWrites: 0,
      deadLettered: 0,
    });
    expect(await jobsIn(app.queue)).toBe(51);

    // Through addBulk (a client without a socket of its own): ioredis keeps sending the script's hash
    // inside Bull's MULTI, where it cannot reload it; without the one-by-one fallback every job of the
    // batch would come back without an id, for up to a minute.
    expect(await redis.command('SCRIPT', 'FLUSH')).toBe('+OK');
    const calls = { addBulk: 0, add: 0 };
    const sink = new BullSink({ queues: [bareQueue(app.queue, calls) as never] });
    const batch = range(0, 20).map((k) => ({ kind: 'job' as const, queue: QUEUE, name: 'confirm', data: { id: `bulk-${k}` }, when: 'success' as const, createdAt: Date.now() }));
    expect(await sink.write(batch, { signal: new AbortController().signal, attempt: 1 })).toBeUndefined();
    expect(calls).toEqual({ addBulk: 1, add: 20 }); // the MULTI refused them all (NOSCRIPT); each added alone
    expect(await jobsIn(app.queue)).toBe(71);
  });

  it('with a small maxQueueSize, drops and counts what does not fit during the outage, and delivers the rest', async () => {
    app = await startBullApp(platform, { deferred: { maxQueueSize: 20, maxBatchSize: 10, ...outageRetries } });
    const { url } = app.started;

    await load(url, range(0, 20).map((i) => `/order/${i}`), 5);
    expect(await app.work.flush(5000)).toBe(true);
    await redis.stop();
    const down = load(url, range(20, 80).map((i) => `/order/${i}`), 5);
    const watched = await watchIdentity(app.work, down);
    const held = app.work.stats();
    await redis.start();

    expect((await down).every((s) => s === 200)).toBe(true);
    expect(watched.broken).toEqual([]);
    expect(held.sinks.bull.pending).toBeLessThanOrEqual(20);
    expect(held.sinks.bull.dropped).toBe(80 - 20 - held.sinks.bull.pending);
    const flushed = await app.work.flush(20_000);
    if (!flushed) throw new Error(`not flushed: ${JSON.stringify({ bull: app.work.stats().sinks.bull, redis: app.queue.client.status })}`);
    const stats = app.work.stats();
    expect(identityHolds(stats)).toBe(true);
    expect(stats.sinks.bull).toMatchObject({ accepted: 80, pending: 0, deadLettered: 0, dropped: held.sinks.bull.dropped });
    expect(stats.sinks.bull.delivered).toBe(80 - held.sinks.bull.dropped);
    expect(await jobsIn(app.queue)).toBe(stats.sinks.bull.delivered);
    await eventually(() => expect(app!.processed.size).toBe(stats.sinks.bull.delivered), 15_000);
  });

  it('drains everything on shutdown under load with a healthy Redis: zero items lost', async () => {
    app = await startBullApp(platform, { process: false, deferred: { flushIntervalMs: 60_000, maxBatchSize: 64 } });
    const { started, work, prefix } = app;
    let pendingAtClose = -1;
    let closing: Promise<void> | undefined;

    const statuses = await load(started.url, range(0, 150).map((i) => `/order/${i}`), 10, (done) => {
      if (done === 100) {
        pendingAtClose = work.stats().pending;
        closing = started.close();
      }
    });
    await closing;
    app = undefined;

    expect(pendingAtClose).toBeGreaterThan(0); // work was still held when the app began to close
    const report = await work.shutdown(); // the one the shutdown hooks ran (idempotent)
    expect(report).toEqual({ drained: true, undelivered: {} });
    const stats = work.stats();
    expect(stats.accepted).toBeGreaterThanOrEqual(statuses.filter((s) => s === 200).length);
    expect(stats.sinks.bull).toMatchObject({ pending: 0, dropped: 0, deadLettered: 0, delivered: stats.accepted });
    const { waiting, missing } = await inspect(prefix, async (queue) => ({
      waiting: await queue.getWaitingCount(),
      missing: (
        await Promise.all(
          range(0, 150)
            .filter((i) => statuses[i] === 200)
            .map(async (i) => ((await queue.getJob(`order-${i}`)) ? null : i)),
        )
      ).filter((i) => i !== null),
    }));
    expect(missing).toEqual([]);
    expect(waiting).toBe(stats.accepted);
  });

  it('with Redis dead, shutdown ends by its deadline and reports what it could not deliver', async () => {
    app = await startBullApp(platform, { process: false, deferred: { shutdownTimeoutMs: 500 } });
    const { started, work } = app;
    await load(started.url, range(0, 10).map((i) => `/order/${i}`), 5);
    expect(await work.flush(5000)).toBe(true);
    await redis.stop();
    expect((await load(started.url, range(10, 40).map((i) => `/order/${i}`), 5)).every((s) => s === 200)).toBe(true);
    const pending = work.stats().sinks.bull.pending;
    expect(pending).toBe(30);

    const began = Date.now();
    await started.close();
    const took = Date.now() - began;
    app = undefined;

    // 500 ms of drain, then Bull's own close (its QUIT gives up after 500 ms): bounded, not minutes.
    expect(took).toBeLessThan(500 + 2500);
    const report = await work.shutdown();
    expect(report).toEqual({ drained: false, undelivered: { bull: 30 } });
    const stats = work.stats();
    expect(identityHolds(stats)).toBe(true);
    expect(stats.sinks.bull).toMatchObject({ accepted: 40, delivered: 10, pending: 0, deadLettered: 30 });
    expect(work.deadLetters().filter((l) => l.reason === 'shutdown')).toHaveLength(30);
  });

  it('rejects and counts bad items (circular, BigInt, too large); the others are delivered', async () => {
    app = await startBullApp(platform, { deferred: { maxItemBytes: 1024 } });
    const statuses = await load(app.started.url, ['/bad/circular', '/bad/bigint', '/bad/huge', '/bad/none'], 2);

    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(await app.work.flush(5000)).toBe(true);
    const stats = app.work.stats();
    expect(stats.rejected).toBe(3);
    expect(stats.sinks.bull).toMatchObject({ accepted: 4, delivered: 4, deadLettered: 0 });
    await eventually(() => expect(app!.processed.size).toBe(4), 10_000);
    expect([...app.processed.keys()].sort()).toEqual(['after-bigint', 'after-circular', 'after-huge', 'after-none']);
  });
});

describe('Bull sink: what Redis refuses, and shutdown order', () => {
  failOnUnhandledRejection();
  const express = platforms[0];

  it.each([
    ['single adds (a connected client of its own)', false],
    ['one addBulk (a MULTI, which leaves the refused job without an id; added again alone)', true],
  ])('reports a job Redis refused as failed by index, with its code, and dead-letters only that job: %s', async (_way, throughMulti) => {
    // A debounce key of the wrong type makes the addJob script fail with WRONGTYPE for that one job;
    // inside a MULTI, Bull's addBulk still resolves, leaving the job without an id.
    const app = await startBullApp(express, {
      process: false,
      deferred: { sinkOptions: { bull: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 5 } } },
    });
    try {
      await app.queue.client.hset(`${app.prefix}:${QUEUE}:de:poison`, 'not', 'a string');

      const calls = { addBulk: 0 };
      const queue = throughMulti ? bareQueue(app.queue, calls) : Object.assign(Object.create(app.queue) as Queue, { addBulk: bareQueue(app.queue, calls).addBulk });
      const sink = new BullSink({ queues: [queue as never] });
      const result = await sink.write(
        ['a', 'poison', 'b'].map((id) => ({
          kind: 'job' as const,
          queue: QUEUE,
          name: 'confirm',
          data: { id },
          opts: id === 'poison' ? { debounce: { id: 'poison' } } : undefined,
          when: 'success' as const,
          createdAt: Date.now(),
        })),
        { signal: new AbortController().signal, attempt: 1 },
      );
      expect(result).toEqual({ failed: [expect.objectContaining({ index: 1 })] });
      expect((result as { failed: { error: SinkWriteError }[] }).failed[0].error).toMatchObject({ code: 'WRONGTYPE', retryable: false });
      expect(String((result as { failed: { error: unknown }[] }).failed[0].error)).toMatch(/Redis refused job "confirm": WRONGTYPE/);
      expect(calls.addBulk).toBe(throughMulti ? 1 : 0);
      expect(await app.queue.getWaitingCount()).toBe(2);

      // Through the dispatcher: the good jobs are written once, the refused one dead-lettered at once (WRONGTYPE: sent again, it fails again).
      const statuses = await load(app.started.url, ['/plain/c', '/plain/poison', '/plain/d'], 3);
      expect(statuses).toEqual([200, 200, 200]);
      expect(await app.work.flush(5000)).toBe(true);
      expect(app.work.stats().sinks.bull).toMatchObject({ accepted: 3, delivered: 2, deadLettered: 1, retried: 0 });
      expect(app.work.deadLetters()).toEqual([
        expect.objectContaining({ reason: 'not-retryable', code: 'WRONGTYPE', attempts: 1, item: expect.objectContaining({ data: { id: 'poison' } }) }),
      ]);
      const waiting = await app.queue.getWaiting();
      expect(waiting.map((j) => (j.data as { id: string }).id).sort()).toEqual(['a', 'b', 'c', 'd']);
    } finally {
      await app.started.close();
    }
  });

  it('without drainBeforeQueueClose, @nestjs/bull closes its queues before the drain: the items are dead-lettered as "closed"', async () => {
    const app = await startBullApp(express, {
      process: false,
      sink: { drainBeforeQueueClose: false },
      deferred: { flushIntervalMs: 60_000 },
    });
    expect((await load(app.started.url, range(0, 10).map((i) => `/order/${i}`), 5)).every((s) => s === 200)).toBe(true);
    expect(app.work.stats().pending).toBe(10);

    await app.started.close();

    expect(app.work.stats().sinks.bull).toMatchObject({ accepted: 10, delivered: 0, deadLettered: 10 });
    expect(app.work.deadLetters()[0]).toMatchObject({ reason: 'not-retryable' });
    expect(app.work.deadLetters()[0].error).toMatch(/Bull queue "mail" is closed/);
  });
});
