import { BullModule } from '@nestjs/bull';
import Bull from 'bull';
import { BullSink, unpackJob } from 'nestjs-deferred-work/bull';
import { RedisServer } from '../support/redis-server';
import { describeSinkConformance } from '../support/sink-conformance';

/** BullSink through the queue the app registered with @nestjs/bull (found by DI), on a private Redis. */
const redis = new RedisServer({ persistent: true });
const RUN = `dw-conf-bull-${process.pid}-${Date.now().toString(36)}`;
// disconnectTimeout: ioredis keeps a 2 s timer per connection it could not end cleanly (Redis dead); a short one lets Jest exit at once.
const connection = () => ({ host: redis.host, port: redis.port, retryStrategy: () => 50, disconnectTimeout: 100 });
let prefix = '';
let n = 0;

beforeAll(() => redis.start());
afterAll(() => redis.dispose());

// Redis is reached directly, so there is no black-holed link here. Through a TCP proxy that accepts and
// then drops connections while the link is cut, Bull 4's ioredis client was seen to wedge: status
// `ready` on a socket destroyed before it connected, every command parked in its offline queue. The
// sink then fails its writes fast (it sends nothing on a socket it cannot write) until the client
// reconnects; a Redis restart (below, and in test/integration/bull-sink.spec.ts) recovers cleanly.
/** Once as is, once with `packJobs` (a write's jobs of one name packed into one job, read back unpacked). */
describe.each([
  { mode: '', packJobs: false },
  { mode: ' (packJobs)', packJobs: true },
])('BullSink$mode', ({ mode, packJobs }) => {
  // with packJobs, some writes must have been packed (received() reads packed and single jobs alike)
  let packsSeen = 0;
  afterAll(() => expect(packsSeen > 0).toBe(packJobs));
  describeSinkConformance({
    name: `BullSink${mode}`,
    open: async () => {
      prefix = `${RUN}-${++n}`;
      // A debounce key of the wrong type: Bull's addJob script fails with WRONGTYPE for the job that uses it, and only it.
      expect(await redis.command('HSET', `${prefix}:conf:de:poison`, 'not', 'a string')).toBe(':1');
      return {
        sink: new BullSink({ packJobs }),
        imports: [BullModule.forRoot({ redis: connection(), prefix }), BullModule.registerQueue({ name: 'conf' })],
      };
    },
    defer: (work, mark) => work.job('conf', 'item', { mark }),
    poison: (work, mark) => work.job('conf', 'item', { mark }, { debounce: { id: 'poison' } }),
    received: async () => {
      const queue = new Bull('conf', { redis: connection(), prefix });
      try {
        const jobs = await queue.getJobs(['waiting', 'paused', 'delayed', 'active', 'completed', 'failed']);
        packsSeen += jobs.filter((job) => String(job.id).startsWith('dw-pack-')).length;
      return jobs.flatMap((job) => unpackJob<{ mark: string }>(job).map((item) => String(item.data.mark)));
      } finally {
        await queue.close();
      }
    },
    outage: redis,
    // ENOTCONN: the sink adds nothing while the queue's client is not connected (and ioredis's "Connection is closed."); ECONNRESET / ECONNREFUSED: Redis stopped; ETIMEDOUT: writeTimeoutMs
    outageCodes: ['ENOTCONN', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT'],
  });
});
