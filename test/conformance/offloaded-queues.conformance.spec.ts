import Bull from 'bull';
import { Queue as BullMqQueue } from 'bullmq';
import { BullSink } from 'nestjs-deferred-work/bull';
import { BullMqSink } from 'nestjs-deferred-work/bullmq';
import { RedisServer } from '../support/redis-server';
import { describeSinkConformance } from '../support/sink-conformance';

/**
 * `BullSink.offloaded()` and `BullMqSink.offloaded()`: the worker thread (run from dist: `pnpm build`
 * first) creates its own queue `conf` from plain options, on a private Redis. The poison is a key of
 * the wrong type that the job's option makes the add script touch (Bull: `debounce`, BullMQ:
 * `deduplication`): Redis answers WRONGTYPE for that job only, in the worker, and the reply crosses
 * the thread with its code and "not retryable".
 */
const redis = new RedisServer({ persistent: true });
const RUN = `dw-conf-offload-${process.pid}-${Date.now().toString(36)}`;
let prefix = '';
let n = 0;

beforeAll(() => redis.start());
afterAll(() => redis.dispose());

/** A fresh prefix per test, with the poison key in it. */
async function freshPrefix(): Promise<string> {
  prefix = `${RUN}-${++n}`;
  expect(await redis.command('HSET', `${prefix}:conf:de:poison`, 'not', 'a string')).toBe(':1');
  return prefix;
}

/** ENOTCONN: the sink (in the worker) adds nothing while the queue's client is not connected; ECONNRESET / ECONNREFUSED: Redis stopped; ETIMEDOUT: writeTimeoutMs. */
const QUEUE_OUTAGE_CODES = ['ENOTCONN', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT'];

const marksOf = (jobs: ReadonlyArray<{ data: unknown }>) => jobs.map((job) => String((job.data as { mark: string }).mark));

describeSinkConformance({
  name: 'BullSink.offloaded',
  open: async () => ({ sink: BullSink.offloaded({ redis: { host: redis.host, port: redis.port }, queues: ['conf'], prefix: await freshPrefix() }) }),
  defer: (work, mark) => work.job('conf', 'item', { mark }),
  poison: (work, mark) => work.job('conf', 'item', { mark }, { debounce: { id: 'poison' } }),
  received: async () => {
    const queue = new Bull('conf', { redis: { host: redis.host, port: redis.port }, prefix });
    try {
      return marksOf(await queue.getJobs(['waiting', 'paused', 'delayed', 'active', 'completed', 'failed']));
    } finally {
      await queue.close();
    }
  },
  outage: redis,
  outageCodes: QUEUE_OUTAGE_CODES,
});

describeSinkConformance({
  name: 'BullMqSink.offloaded',
  open: async () => ({ sink: BullMqSink.offloaded({ connection: { host: redis.host, port: redis.port }, queues: ['conf'], prefix: await freshPrefix() }) }),
  defer: (work, mark) => work.job('conf', 'item', { mark }),
  poison: (work, mark) => work.job('conf', 'item', { mark }, { deduplication: { id: 'poison' } }),
  received: async () => {
    const queue = new BullMqQueue('conf', { connection: { host: redis.host, port: redis.port }, prefix });
    try {
      return marksOf(await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed']));
    } finally {
      await queue.close();
    }
  },
  outage: redis,
  outageCodes: QUEUE_OUTAGE_CODES,
});
