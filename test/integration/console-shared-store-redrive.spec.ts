import Redis from 'ioredis';
import pg from 'pg';
import type { DeadLetterRecord, DeadLetterStore } from 'nestjs-deferred-work';
import { RedisStreamDeadLetterStore } from 'nestjs-deferred-work/redis-streams';
import { SqlDeadLetterStore } from 'nestjs-deferred-work/sql';
import { basicAuth, type ConsoleApp, startConsoleApp } from '../support/console-app';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { failOnUnhandledRejection, platforms } from '../support/platforms';
import { PG_URL, requirePostgres } from '../support/postgres';
import { RedisServer } from '../support/redis-server';

/**
 * Two instances sharing one dead-letter store — a table of the machine's PostgreSQL, a Redis Stream —
 * both told through their consoles to "redrive all matching" at the same moment: each record is
 * claimed (deleted) by one of them before it is redriven, so each item reaches the receiver once. Also
 * the error-code filter of both stores, and a claim race on the stores alone.
 */

failOnUnhandledRejection();

const redisServer = new RedisServer();
let redis: Redis;
let pool: pg.Pool;
const table = `console_claims_${process.pid}`;

beforeAll(async () => {
  await requirePostgres();
  pool = new pg.Pool({ connectionString: PG_URL, max: 8 });
  await redisServer.start();
  redis = new Redis({ host: redisServer.host, port: redisServer.port });
});
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
  redis.disconnect();
  await redisServer.dispose();
});

const stores: Array<{ name: string; make: () => DeadLetterStore; reset: () => Promise<unknown> }> = [
  { name: 'SQL (PostgreSQL)', make: () => new SqlDeadLetterStore({ client: pool, table }), reset: () => pool.query(`DROP TABLE IF EXISTS ${table}`) },
  { name: 'Redis Stream', make: () => new RedisStreamDeadLetterStore({ client: redis, key: `console-claims:${process.pid}` }), reset: () => redis.del(`console-claims:${process.pid}`) },
];

function record(i: number, code: string): DeadLetterRecord {
  const at = Date.now();
  return { item: { kind: 'job', id: `dw-${i}`, queue: 'q', name: 'j', data: { i }, createdAt: at, when: 'success' }, sink: 'http', reason: 'not-retryable', error: 'refused', code, attempts: 1, at, id: `dw-${i}:http`, firstAt: at, redrives: 0 };
}

describe.each(stores)('a shared $name dead-letter store', ({ make, reset }) => {
  beforeEach(() => reset());

  it('filters by error code in list, count and purge', async () => {
    const store = make();
    await store.open?.();
    await store.add(Array.from({ length: 9 }, (_, i) => record(i, i % 3 === 0 ? '422' : '400')));
    expect(await store.count({ code: '422' })).toBe(3);
    expect((await store.list({ code: '400', limit: 100 })).records.map((r) => r.id)).toEqual(['dw-1:http', 'dw-2:http', 'dw-4:http', 'dw-5:http', 'dw-7:http', 'dw-8:http']);
    expect(await store.count({ code: 'ECONNREFUSED' })).toBe(0);
    expect(await store.purge({ code: '422', sink: 'http' })).toBe(3);
    expect(await store.count({})).toBe(6);
  });

  it('lets only one of two callers racing to remove a record have it', async () => {
    const a = make();
    const b = make();
    await a.open?.();
    await b.open?.();
    await a.add(Array.from({ length: 40 }, (_, i) => record(i, '400')));
    await Promise.all([a.list({ limit: 100 }), b.list({ limit: 100 })]); // both have seen every record
    const ids = Array.from({ length: 40 }, (_, i) => `dw-${i}:http`);
    const won = await Promise.all(ids.flatMap((id) => [a.remove([id]), b.remove([id])]));
    expect(won.reduce((sum, n) => sum + n, 0)).toBe(40);
    for (let i = 0; i < 40; i++) expect(won[2 * i]! + won[2 * i + 1]!).toBe(1);
  });

  describe.each(platforms)('two apps on $name', (platform) => {
    let receiver: HttpReceiver;
    let apps: ConsoleApp[] = [];
    afterEach(async () => {
      await Promise.all(apps.map((app) => app.close()));
      apps = [];
      await receiver.close();
    });

    it('redriving all at once through their consoles delivers each record once', async () => {
      receiver = await HttpReceiver.start(() => ({ status: 400 }));
      for (let i = 0; i < 2; i++) {
        apps.push(await startConsoleApp({ platform, redis, httpUrl: receiver.url('/ingest'), store: make(), stream: `console-claims-sink:${process.pid}` }));
      }
      const [a, b] = apps as [ConsoleApp, ConsoleApp];
      for (let n = 0; n < 50; n++) a.work.job('emails', 'send', { n }, { sink: 'http' });
      await eventually(async () => expect(await b.work.countDeadLetters()).toBe(50), 10_000, 50);
      receiver.responder = () => ({ status: 200 });
      // Each console's cookie first, then both posts at the same moment.
      const cookieOf = async (app: ConsoleApp) => (await fetch(`${app.consoleUrl}/dead-letters`, { headers: { authorization: basicAuth() } })).headers.get('set-cookie')!.split(';')[0]!;
      const cookies = await Promise.all([cookieOf(a), cookieOf(b)]);
      const redriveAll = async (app: ConsoleApp, cookie: string) => {
        const response = await fetch(`${app.consoleUrl}/dead-letters/redrive`, {
          method: 'POST',
          headers: { authorization: basicAuth(), cookie, origin: new URL(app.consoleUrl).origin, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ _csrf: cookie.split('=')[1]!, scope: 'filter', confirm: 'yes' }),
        });
        expect(response.status).toBe(200);
        return Number(/data-field="redriven">(\d+)</.exec(await response.text())![1]);
      };
      const [byA, byB] = await Promise.all([redriveAll(a, cookies[0]), redriveAll(b, cookies[1])]);
      await receiver.waitForDelivered(50, '/ingest');
      expect(await a.work.settled(5000)).toBe(true);
      expect(await b.work.settled(5000)).toBe(true);
      const ids = (receiver.delivered('/ingest') as Array<{ id: string }>).map((item) => item.id);
      expect(new Set(ids).size).toBe(50);
      expect(ids).toHaveLength(50);
      expect(byA + byB).toBe(50);
      expect(await a.work.countDeadLetters()).toBe(0);
      console.log(`${platform.name}: 50 records, redriven ${byA} by one app and ${byB} by the other, 50 delivered, ${ids.length - new Set(ids).size} twice`);
    });
  });
});
