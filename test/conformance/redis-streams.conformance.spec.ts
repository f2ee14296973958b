import { Redis } from 'ioredis';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { RedisServer } from '../support/redis-server';
import { describeSinkConformance } from '../support/sink-conformance';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * RedisStreamSink through the app's ioredis client registered under 'REDIS' (found by DI), on a
 * private Redis. The app reaches Redis through a proxy (cut, black-holed); the test's reader goes
 * direct and reads every entry of the stream (duplicates show).
 */
const redis = new RedisServer({ persistent: true });
const RUN = `dw-conf-streams-${process.pid}-${Date.now().toString(36)}`;
let stream = '';
let n = 0;
let proxy: TcpProxy;

beforeAll(async () => {
  await redis.start();
  proxy = new TcpProxy(redis.port);
  await proxy.listen();
});
afterAll(async () => {
  await proxy.close();
  await redis.dispose();
});

describeSinkConformance({
  name: 'RedisStreamSink',
  open: async () => {
    stream = `${RUN}-${++n}`;
    // A key that holds a string: Redis refuses an XADD to it (WRONGTYPE), and only that one.
    const admin = new Redis({ host: redis.host, port: redis.port });
    await admin.set(`${stream}:poison`, 'not a stream');
    admin.disconnect();
    const app = new Redis({ host: redis.host, port: proxy.port, retryStrategy: () => 50 });
    return {
      sink: new RedisStreamSink({ stream: (item) => (item.kind === 'job' && (item.data as { poison?: boolean }).poison ? `${stream}:poison` : stream) }),
      providers: [{ provide: 'REDIS', useValue: app }],
      close: async () => void app.disconnect(),
    };
  },
  defer: (work, mark) => work.job('conf', 'item', { mark }),
  poison: (work, mark) => work.job('conf', 'item', { mark, poison: true }),
  received: async () => {
    const reader = new Redis({ host: redis.host, port: redis.port });
    try {
      const entries = await reader.xrange(stream, '-', '+');
      return entries.map(([, fields]) => String((JSON.parse(fields[fields.indexOf('payload') + 1]) as { data: { mark: string } }).data.mark));
    } finally {
      reader.disconnect();
    }
  },
  outage: { stop: () => proxy.stop(), start: () => proxy.start(), get running() { return proxy.running; } },
  blackhole: { on: () => proxy.blackhole.on(), off: () => proxy.blackhole.off() },
  // A pipeline cut with the link: entries Redis appended whose replies were lost are appended again (same id field).
  duplicatesInOutage: true,
  // ENOTCONN: the sink sends nothing while ioredis is not connected (and ioredis's "Connection is closed."); ECONNRESET: the cut; ETIMEDOUT: writeTimeoutMs
  outageCodes: ['ENOTCONN', 'ECONNRESET', 'ETIMEDOUT'],
});
