import { createRequire } from 'node:module';
import { BullModule as BullNestModule, getQueueToken as bullQueueToken } from '@nestjs/bull';
import { BullModule as BullMqNestModule, getQueueToken as bullMqQueueToken } from '@nestjs/bullmq';
import { Controller, Get, Param } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { eventually } from '../support/eventually';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * RedisStreamSink writing through a Bull or BullMQ queue's own connection (the app has no other
 * ioredis client), against private redis-servers: the queue registered with `@nestjs/bull` /
 * `@nestjs/bullmq` and named by its token, or given; the queue closed by the app before the drain
 * (its close waits until the entries are written); BullMQ 6's ioredis adapter (its `xadd` takes
 * another argument shape) with Redis down while the app starts. On Express and Fastify.
 */
failOnUnhandledRejection();
const server = new RedisServer();
let admin: Redis;
let n = 0;
const RUN = `dw-sq-${process.pid}`;
const nextStream = () => `${RUN}-${++n}`;

/** BullMQ 6, as the library's own install resolves it (the tests' root resolves BullMQ 5, whose queues hand out ioredis itself). */
const bullmq6 = createRequire(new URL('../../packages/nestjs-deferred-work/package.json', import.meta.url))('bullmq') as typeof import('bullmq');
/** Bull 4's Queue (CommonJS: its export is the class). */
const BullQueue = createRequire(import.meta.url)('bull') as new (name: string, options: object) => { close(): Promise<void>; client: Redis };

beforeAll(async () => {
  await server.start();
  admin = new Redis({ host: server.host, port: server.port });
});
afterAll(async () => {
  admin.disconnect();
  await server.dispose();
});

@Controller()
class StreamController {
  @Get('entries/:mark')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'entry', { mark });
    return { mark };
  }
}

/** The marks of every entry in `stream`, in stream order. */
async function marksIn(redis: Redis, stream: string): Promise<string[]> {
  const entries = (await redis.xrange(stream, '-', '+')) as Array<[string, string[]]>;
  return entries.map(([, flat]) => {
    const payload = flat[flat.indexOf('payload') + 1];
    return (JSON.parse(payload) as { fields: { mark: string } }).fields.mark;
  });
}

const sinkOptions = (flushIntervalMs: number) => ({
  'redis-streams': { flushIntervalMs, initialBackoffMs: 50, maxBackoffMs: 300, maxAttempts: 200, writeTimeoutMs: 1000 },
});

type Closable = { close(): Promise<void> };

describe.each(platforms)("RedisStreamSink through a queue's connection ($name)", (platform) => {
  /** An app whose only Redis connection is the queue's (`queueModules`), the sink naming it by `client`. */
  const start = (client: unknown, stream: string, flushIntervalMs: number, queueModules: unknown[] = []) =>
    startApp(platform, {
      imports: [
        ...(queueModules as never[]),
        DeferredWorkModule.forRoot({ sinks: [new RedisStreamSink({ client, stream })], sinkOptions: sinkOptions(flushIntervalMs) }),
      ],
      controllers: [StreamController],
    });

  /** `count` requests marked `<platform>-<tag><i>`, every response 200; their marks. */
  const requests = async (url: string, tag: string, count: number) => {
    const marks = range(0, count).map((i) => `${platform.name}-${tag}${i}`);
    expect((await load(url, marks.map((m) => `/entries/${m}`), 5)).every((s) => s === 200)).toBe(true);
    return marks;
  };

  /** `count` requests through the started app: every entry delivered and in `stream` (read by `reader`) once. */
  const deliveredOnce = async (started: Awaited<ReturnType<typeof start>>, stream: string, count: number, reader: Redis = admin) => {
    const work = started.app.get(DeferredWork);
    const marks = await requests(started.url, 'a', count);
    await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: count, delivered: count, pending: 0, deadLettered: 0 }));
    expect((await marksIn(reader, stream)).sort()).toEqual([...marks].sort());
  };

  /** The modules of an app whose queue "events" is registered with `@nestjs/bullmq`. */
  const bullMqModules = () => [
    BullMqNestModule.forRoot({ connection: { host: server.host, port: server.port }, prefix: `${RUN}-mq` }),
    BullMqNestModule.registerQueue({ name: 'events' }),
  ];

  /**
   * A backlog, the queue closed by the app before the app closes: the entries wait out a long linger;
   * `queue.close()` first has the sink drain (its entries written through the queue's connection),
   * then closes the queue. Without the hold, the close would take the connection from under them.
   */
  const backlogThroughClosedQueue = async (started: Awaited<ReturnType<typeof start>>, queue: Closable, stream: string) => {
    const work = started.app.get(DeferredWork);
    try {
      const marks = await requests(started.url, 'b', 40);
      expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 40, delivered: 0, pending: 40 });
      await queue.close();
      expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 40, delivered: 40, pending: 0, deadLettered: 0 });
      expect((await marksIn(admin, stream)).sort()).toEqual([...marks].sort());
    } finally {
      await started.close();
    }
  };

  it('a BullMQ queue registered with @nestjs/bullmq, by its token: 60 requests give 60 entries, each once', async () => {
    const stream = nextStream();
    const started = await start(bullMqQueueToken('events'), stream, 5, bullMqModules());
    try {
      await deliveredOnce(started, stream, 60);
    } finally {
      await started.close();
    }
  });

  it('the same, a backlog at shutdown: the app closes the queue before the drain, and its close waits until the entries are written', async () => {
    const stream = nextStream();
    const started = await start(bullMqQueueToken('events'), stream, 60_000, bullMqModules());
    await backlogThroughClosedQueue(started, started.app.get<Closable>(bullMqQueueToken('events')), stream);
  });

  it('a Bull 4 queue registered with @nestjs/bull, by its token; and a backlog through it when the app closes it first', async () => {
    const stream = nextStream();
    const modules = [BullNestModule.forRoot({ redis: { host: server.host, port: server.port }, prefix: `${RUN}-bull` }), BullNestModule.registerQueue({ name: 'events' })];
    const started = await start(bullQueueToken('events'), stream, 5, modules);
    try {
      await deliveredOnce(started, stream, 60);
    } finally {
      await started.close();
    }
    const backlogStream = nextStream();
    const again = await start(bullQueueToken('events'), backlogStream, 60_000, modules);
    await backlogThroughClosedQueue(again, again.app.get<Closable>(bullQueueToken('events')), backlogStream);
  });

  it('a Bull 4 queue given itself: its connection carries the entries', async () => {
    const stream = nextStream();
    const queue = new BullQueue('given', { redis: { host: server.host, port: server.port }, prefix: `${RUN}-given` });
    const started = await start(queue, stream, 5);
    try {
      await deliveredOnce(started, stream, 30, queue.client);
    } finally {
      await started.close();
      await queue.close();
    }
  });

  it('a BullMQ 6 queue (its ioredis adapter) given while Redis is down: the app starts, the entries wait, and are written once each when Redis starts', async () => {
    // Redis behind a proxy that holds its port and drops every connection until Redis "starts": a port
    // left free instead could be taken meanwhile by another test's server
    const late = new RedisServer();
    await late.start();
    const link = await TcpProxy.refusing(late.port, late.host);
    const queue = new bullmq6.Queue('late', { connection: { host: link.host, port: link.port, retryStrategy: () => 200 }, prefix: `${RUN}-late` });
    queue.on('error', () => undefined); // connection refused until the server starts
    const stream = nextStream();
    const started = await start(queue, stream, 5);
    let reader: Redis | undefined;
    try {
      const work = started.app.get(DeferredWork);
      const marks = await requests(started.url, 'a', 30);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 30, delivered: 0, pending: 30 });
      await link.start();
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 30, delivered: 30, pending: 0, deadLettered: 0 }), 20_000);
      // the queue's client is BullMQ's adapter (whose own xadd takes another shape): what this test is about
      expect((await (queue as unknown as { getBackend(): { client: Promise<{ __bullmq_iredis?: boolean }> } }).getBackend().client).__bullmq_iredis).toBe(true);
      reader = new Redis({ host: late.host, port: late.port });
      const read = await marksIn(reader, stream);
      expect(read.sort()).toEqual([...marks].sort());
    } finally {
      await started.close();
      await queue.close();
      reader?.disconnect();
      await link.close();
      await late.dispose();
    }
  });
});
