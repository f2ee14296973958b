import { BullModule } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { BullMqSink, unpackJob } from 'nestjs-deferred-work/bullmq';
import { RedisServer } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { describeSinkConformance } from '../support/sink-conformance';

/** BullMqSink through the queue the app registered with @nestjs/bullmq (found by DI), on a private Redis. */
const redis = new RedisServer({ persistent: true });
const RUN = `dw-conf-bullmq-${process.pid}-${Date.now().toString(36)}`;
let prefix = '';
let n = 0;

let proxy: TcpProxy; // the app reaches Redis through it (a black-holed link); the test's reader goes direct

beforeAll(async () => {
  await redis.start();
  proxy = new TcpProxy(redis.port);
  await proxy.listen();
});
afterAll(async () => {
  await proxy.close();
  await redis.dispose();
});

/** Once as is, once with `packJobs` (a write's jobs of one name packed into one job, read back unpacked). */
describe.each([
  { mode: '', packJobs: false },
  { mode: ' (packJobs)', packJobs: true },
])('BullMqSink$mode', ({ mode, packJobs }) => {
  // with packJobs, some writes must have been packed (received() reads packed and single jobs alike)
  let packsSeen = 0;
  afterAll(() => expect(packsSeen > 0).toBe(packJobs));
  describeSinkConformance({
    name: `BullMqSink${mode}`,
    open: async () => {
      prefix = `${RUN}-${++n}`;
      // A deduplication key of the wrong type: Redis refuses the job that uses it (WRONGTYPE), and only it.
      const client = new Redis({ host: redis.host, port: redis.port });
      await client.hset(`${prefix}:conf:de:poison`, { not: 'a string' });
      client.disconnect();
      return {
        sink: new BullMqSink({ packJobs }),
        imports: [BullModule.forRoot({ connection: { host: redis.host, port: proxy.port, retryStrategy: () => 50 }, prefix }), BullModule.registerQueue({ name: 'conf' })],
      };
    },
    defer: (work, mark) => work.job('conf', 'item', { mark }),
    poison: (work, mark) => work.job('conf', 'item', { mark }, { deduplication: { id: 'poison' } }),
    received: async () => {
      const queue = new Queue('conf', { connection: { host: redis.host, port: redis.port }, prefix });
      try {
        const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed']);
        packsSeen += jobs.filter((job) => String(job.id).startsWith('dw-pack-')).length;
      return jobs.flatMap((job) => unpackJob<{ mark: string }>(job).map((item) => String(item.data.mark)));
      } finally {
        await queue.close();
      }
    },
    // The link cut (connections reset, new ones refused) and restored; a Redis restart is in test/integration.
    outage: { stop: () => proxy.stop(), start: () => proxy.start(), get running() { return proxy.running; } },
    blackhole: { on: () => proxy.blackhole.on(), off: () => proxy.blackhole.off() },
    // ENOTCONN: the sink adds nothing while the queue's client is not connected (and ioredis's "Connection is closed."); ECONNRESET: the cut; ETIMEDOUT: writeTimeoutMs
    outageCodes: ['ENOTCONN', 'ECONNRESET', 'ETIMEDOUT'],
  });
});
