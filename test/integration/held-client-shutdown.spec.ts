import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import pg from 'pg';
import { compileFixture, NodeApp } from '../support/node-app';
import { PG_URL, requirePostgres } from '../support/postgres';
import { RedisServer } from '../support/redis-server';
import { SqsEndpoint } from '../support/sqs-endpoint';
import { requireBroker } from '../support/tcp-proxy';

/**
 * Hold-open at shutdown, as real processes (test/fixtures/held-client.app.ts): the app closes its own
 * client — a `pg` Pool, a TypeORM DataSource, Knex, ioredis (`quit()` and `disconnect()`), an AWS SDK
 * SQSClient, a `ClientProxy` — in `onModuleDestroy`, `beforeApplicationShutdown` or
 * `onApplicationShutdown`, all of which Nest runs before the hooks of the (global) DeferredWorkModule.
 * A sink writing through that client, found by DI and held open with `holdOpen`, still delivers its
 * whole backlog: the client's real close runs after the last write. With HOLD=0 the same app loses
 * items, which shows the test can tell.
 */
const amqp = createRequire(import.meta.url)('amqplib') as {
  connect(url: string): Promise<{ createChannel(): Promise<{ checkQueue(q: string): Promise<{ messageCount: number }>; deleteQueue(q: string): Promise<unknown> }>; close(): Promise<void> }>;
};
const AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
const RUN = `dw_hold_${process.pid}_${Date.now().toString(36)}`;
const COUNT = 200;
const redis = new RedisServer();
const sqs = new SqsEndpoint();
let db: pg.Pool;
let file: string;
let app: NodeApp | undefined;
let seq = 0;

interface Final {
  report: { drained: boolean; undelivered: Record<string, number> };
  stats: { accepted: number; delivered: number; pending: number; deadLettered: number };
  events: string[];
}

beforeAll(async () => {
  await requirePostgres();
  await requireBroker('RabbitMQ', 5672, 'start RabbitMQ (rabbitmq-server -detached; guest/guest on 127.0.0.1:5672).');
  file = compileFixture('held-client.app');
  db = new pg.Pool({ connectionString: PG_URL, max: 2 });
  await Promise.all([redis.start(), sqs.start()]);
}, 60_000);
afterEach(() => app?.kill());
afterAll(async () => {
  await db?.end();
  await Promise.all([redis.dispose(), sqs.stop()]);
});

/** Where each kind of client writes, and how the test counts what arrived. */
const backends: Record<string, { prepare(run: string): Promise<void>; count(run: string): Promise<number> }> = {
  postgres: {
    prepare: async (run) => void (await db.query(`CREATE TABLE ${run} (id text PRIMARY KEY)`)),
    count: async (run) => {
      const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${run}`);
      await db.query(`DROP TABLE ${run}`);
      return Number(rows[0].n);
    },
  },
  redis: {
    prepare: async () => undefined,
    count: async (run) => {
      const client = new Redis({ host: redis.host, port: redis.port });
      try {
        return await client.scard(run);
      } finally {
        client.disconnect();
      }
    },
  },
  sqs: {
    prepare: async () => undefined,
    count: async (run) => new Set(sqs.records.filter((r) => r.destination.endsWith(`/${run}`)).map((r) => r.body)).size,
  },
  rabbitmq: {
    prepare: async () => undefined,
    count: async (run) => {
      const connection = await amqp.connect(AMQP_URL);
      try {
        const channel = await connection.createChannel();
        const { messageCount } = await channel.checkQueue(run);
        await channel.deleteQueue(run);
        return messageCount;
      } finally {
        await connection.close();
      }
    },
  },
};

const clients = [
  { kind: 'pg', backend: 'postgres' },
  { kind: 'typeorm', backend: 'postgres' },
  { kind: 'knex', backend: 'postgres' },
  { kind: 'ioredis', backend: 'redis' },
  { kind: 'ioredis-disconnect', backend: 'redis' },
  { kind: 'aws', backend: 'sqs' },
  { kind: 'clientproxy', backend: 'rabbitmq' },
] as const;
const phases = ['onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown'] as const;

async function runApp(kind: string, backend: string, closeIn: string, hold: boolean): Promise<{ final: Final; arrived: number; exit: unknown }> {
  const run = `${RUN}_${++seq}`;
  await backends[backend].prepare(run);
  app = new NodeApp(file, {
    CLIENT_KIND: kind,
    CLOSE_IN: closeIn,
    HOLD: hold ? '1' : '0',
    RUN: run,
    PG_URL,
    REDIS_PORT: String(redis.port),
    SQS_URL: sqs.url,
    AMQP_URL,
    SHUTDOWN_TIMEOUT_MS: '10000',
  });
  const { port } = await app.json<{ port: number }>('port', 20_000);
  for (let i = 0; i < COUNT; i += 50) {
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, j) => fetch(`http://127.0.0.1:${port}/job/${i + j}`).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
  }
  app.signal('SIGTERM');
  const exit = await app.exited;
  const final = await app.json<Final>('report', 1000);
  return { final, arrived: await backends[backend].count(run), exit };
}

describe.each(clients)('a $kind client the app closes itself', ({ kind, backend }) => {
  it.each(phases)('in %s: the held client stays open until its sink has delivered the whole backlog', async (closeIn) => {
    const { final, arrived, exit } = await runApp(kind, backend, closeIn, true);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(final.report).toEqual({ drained: true, undelivered: {} });
    expect(final.stats).toMatchObject({ accepted: COUNT, delivered: COUNT, pending: 0, deadLettered: 0 });
    expect(arrived).toBe(COUNT);
    // the real close ran last, after writes made once the app had asked to close (a real backlog)
    expect(final.events.at(-1)).toBe('close');
    const asked = final.events.indexOf(`app-closes:${closeIn}`);
    expect(asked).toBeGreaterThanOrEqual(0);
    if (kind !== 'clientproxy') expect(final.events.slice(asked).some((e) => e.startsWith('write:'))).toBe(true);
  }, 40_000);
});

describe('without holdOpen (the control)', () => {
  it('a pg Pool closed in onModuleDestroy loses the backlog, dead-lettered and counted', async () => {
    const { final, arrived, exit } = await runApp('pg', 'postgres', 'onModuleDestroy', false);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(arrived).toBeLessThan(COUNT);
    expect(final.stats.delivered).toBe(arrived);
    expect(final.stats.accepted).toBe(final.stats.delivered + final.stats.pending + final.stats.deadLettered);
    const asked = final.events.indexOf('app-closes:onModuleDestroy');
    expect(final.events[asked + 1]).toBe('close'); // closed at once, before the backlog was written
  }, 40_000);
});
