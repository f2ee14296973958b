import { createPool as createMysqlPool } from 'mysql2';
import pg from 'pg';
import type { DeadLetterRecord } from 'nestjs-deferred-work';
import { SqlDeadLetterStore } from 'nestjs-deferred-work/sql';
import { deadLettersOutliveTheApp } from '../support/dead-letters-outlive';
import { MYSQL_URL, requireMariaDb } from '../support/mariadb';
import { failOnUnhandledRejection, platforms } from '../support/platforms';
import { PG_URL, requirePostgres } from '../support/postgres';
import { mysqlTestPool, pgTestPool, type TestSqlPool, withPort } from '../support/sql-pools';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * SqlDeadLetterStore against the machine's PostgreSQL and MariaDB, through the app's pg Pool and mysql2
 * pool: the table created at open, paging, filters, bounds by count and age, remove and purge; and in an
 * app, dead letters that outlive it, redriven by the next app exactly once to the recovered receiver.
 */

failOnUnhandledRejection();

interface Db {
  client: unknown;
  exec(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

const databases: Record<string, { require(): Promise<void>; open(): Db }> = {
  postgres: {
    require: requirePostgres,
    open() {
      const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
      return { client: pool, exec: (sql) => pool.query(sql), end: () => pool.end() };
    },
  },
  mariadb: {
    require: requireMariaDb,
    open() {
      const pool = createMysqlPool({ uri: MYSQL_URL, connectionLimit: 4 });
      return { client: pool, exec: (sql) => pool.promise().query(sql), end: () => pool.promise().end() };
    },
  },
};

const table = (n: number) => `dlq_test_${process.pid}_${n}`;
let tables = 0;

function record(i: number, at = Date.now()): DeadLetterRecord {
  const sink = i % 2 === 0 ? 'even' : 'odd';
  return {
    item: { kind: 'job', id: `dw-${i}`, queue: 'q', name: 'j', data: { i }, createdAt: at, when: 'success' } as never,
    sink, reason: 'attempts-exhausted', error: 'refused', attempts: 2, at, id: `dw-${i}:${sink}`, firstAt: at, redrives: 0,
  };
}

describe.each(Object.keys(databases))('SqlDeadLetterStore on %s', (name) => {
  const spec = databases[name]!;
  let db: Db;
  const made: string[] = [];
  beforeAll(async () => {
    await spec.require();
    db = spec.open();
  });
  afterAll(async () => {
    for (const t of made) await db.exec(`DROP TABLE IF EXISTS ${t}`);
    await db.end();
  });
  const store = async (options: { maxCount?: number; maxAgeMs?: number } = {}) => {
    const t = table(++tables);
    made.push(t);
    const s = new SqlDeadLetterStore({ client: db.client, table: t, ...options });
    await s.open();
    return s;
  };

  it('creates its table, pages oldest first, filters, gets, counts, removes and purges; a record with the same id replaces the older one', async () => {
    const s = await store();
    await s.add(Array.from({ length: 7 }, (_, i) => record(i)));
    await s.add([{ ...record(2), redrives: 1 }]);
    const first = await s.list({ limit: 3 });
    const second = await s.list({ limit: 3, after: first.next });
    const third = await s.list({ limit: 3, after: second.next });
    expect([...first.records, ...second.records, ...third.records].map((r) => r.item.id)).toEqual(['dw-0', 'dw-1', 'dw-3', 'dw-4', 'dw-5', 'dw-6', 'dw-2']);
    expect(third.next).toBeUndefined();
    expect(await s.count({})).toBe(7);
    expect(await s.count({ sink: 'odd', reason: 'attempts-exhausted' })).toBe(3);
    expect(await s.get('dw-2:even')).toMatchObject({ redrives: 1, item: { data: { i: 2 } } });
    expect(await s.get('dw-99:odd')).toBeUndefined();
    expect(await s.remove(['dw-3:odd', 'dw-99:odd'])).toBe(1);
    expect(await s.purge({ sink: 'even' })).toBe(4);
    expect((await s.list({})).records.map((r) => r.id)).toEqual(['dw-1:odd', 'dw-5:odd']);
  });

  it('counts only what each call deleted when two replicas purge and remove the same records at once', async () => {
    const s = await store();
    const other = new SqlDeadLetterStore({ client: db.client, table: made[made.length - 1]! });
    const ids = Array.from({ length: 200 }, (_, i) => record(i).id);
    for (let round = 0; round < 5; round++) {
      await s.add(Array.from({ length: 200 }, (_, i) => record(i)));
      const counts = await Promise.all([s.purge({}), other.purge({ sink: 'even' }), s.remove(ids.slice(0, 50)), other.purge({})]);
      expect([round, counts.reduce((sum, n) => sum + n, 0)]).toEqual([round, 200]);
      expect(await s.count({})).toBe(0);
    }
  });

  it('holds maxCount and maxAgeMs, the oldest going first', async () => {
    const byCount = await store({ maxCount: 3 });
    await byCount.add(Array.from({ length: 5 }, (_, i) => record(i)));
    expect((await byCount.list({})).records.map((r) => r.item.id)).toEqual(['dw-2', 'dw-3', 'dw-4']);
    const byAge = await store({ maxAgeMs: 60_000 });
    await byAge.add([record(1, Date.now() - 120_000), record(2)]);
    expect((await byAge.list({})).records.map((r) => r.item.id)).toEqual(['dw-2']);
  });

  it('adds a large write in a few statements: every record once, in order, the last of two with one id kept', async () => {
    const s = await store();
    // 250 records (three INSERTs of at most 100), one of them twice: its second copy is the one kept, at its place
    const records = Array.from({ length: 250 }, (_, i) => record(i));
    records.splice(200, 0, { ...record(7), redrives: 3 });
    // and three of about 400 KB, split by bytes
    const big = (i: number) => ({ ...record(i), error: 'x'.repeat(400_000) });
    await s.add([...records, big(300), big(301), big(302)]);
    const ids: string[] = [];
    for (let page = await s.list({ limit: 1000 }); ; page = await s.list({ limit: 1000, after: page.next })) {
      ids.push(...page.records.map((r) => r.item.id!));
      if (!page.next) break;
    }
    const expected = [...records.map((r) => r.item.id).filter((id, i) => id !== 'dw-7' || i === 200), 'dw-300', 'dw-301', 'dw-302'];
    expect(ids).toEqual(expected);
    expect(await s.get('dw-7:odd')).toMatchObject({ redrives: 3 });
    expect((await s.get('dw-301:odd'))!.error).toHaveLength(400_000);
  });

  it('an add the database refuses leaves the records it would have replaced as they were', async () => {
    const s = await store();
    await s.add([record(1), record(2)]);
    // the second record's reason is longer than its column takes: the INSERT fails, after the DELETE of both ids
    await expect(s.add([{ ...record(1), redrives: 5 }, { ...record(2), reason: 'x'.repeat(40) as never }])).rejects.toThrow();
    expect((await s.list({})).records.map((r) => [r.item.id, r.redrives, r.reason])).toEqual([
      ['dw-1', 0, 'attempts-exhausted'],
      ['dw-2', 0, 'attempts-exhausted'],
    ]);
    await s.add([{ ...record(1), redrives: 5 }]);
    expect(await s.get('dw-1:odd')).toMatchObject({ redrives: 5 });
  });

  it.each(platforms)('keeps dead letters beyond the app on $name; the next app redrives each exactly once', async (platform) => {
    const t = table(++tables);
    made.push(t);
    await deadLettersOutliveTheApp(platform, () => new SqlDeadLetterStore({ client: db.client, table: t }));
  });
});

/**
 * A database that stops answering while the store uses it (a black hole between the app and the server,
 * through a TCP proxy): each call fails after `timeoutMs`, saying so, and gives up its connection — the
 * app's pool still has connections to give once the database answers again.
 */
describe.each([
  { name: 'postgres', url: PG_URL, port: 5432, require: requirePostgres, pool: (url: string) => pgTestPool(url, 2) },
  { name: 'mariadb', url: MYSQL_URL, port: 3306, require: requireMariaDb, pool: (url: string) => mysqlTestPool(url, 2) },
])('SqlDeadLetterStore on $name when the database stops answering', (db) => {
  let proxy: TcpProxy;
  let pool: TestSqlPool;
  const t = table(++tables);
  beforeAll(async () => {
    await db.require();
    proxy = new TcpProxy(Number(new URL(db.url).port || db.port));
    await proxy.listen();
    pool = db.pool(withPort(db.url, proxy.port));
  });
  afterAll(async () => {
    await proxy.blackhole.off();
    await pool.transaction(async (tx) => void (await (tx as { query(sql: string): Promise<unknown> }).query(`DROP TABLE IF EXISTS ${t}`))).catch(() => undefined);
    await proxy.close();
    await pool.close().catch(() => undefined);
  });

  it('each call fails after timeoutMs, saying so, more calls than the pool has connections included; it works again once the database answers', async () => {
    const s = new SqlDeadLetterStore({ client: pool.client, table: t, timeoutMs: 500 });
    await s.open();
    await s.add([record(1)]);
    await proxy.blackhole.on();
    const noAnswer = 'SqlDeadLetterStore: the database did not answer within 500 ms (timeoutMs)';
    // more calls than the pool has connections: each one is cut and its connection destroyed, none waits for one forever
    for (const call of [() => s.add([record(2)]), () => s.list({}), () => s.add([record(3)]), () => s.count({})]) {
      const started = Date.now();
      await expect(call()).rejects.toThrow(noAnswer);
      expect(Date.now() - started).toBeLessThan(3000);
    }
    await proxy.blackhole.off();
    await s.add([record(4)]);
    // 1 and 4, and whichever of 2 and 3 the server carried out from what reached it before the cut
    const ids = (await s.list({})).records.map((r) => r.item.id);
    expect(ids).toEqual(expect.arrayContaining(['dw-1', 'dw-4']));
    expect(ids.filter((id) => !['dw-1', 'dw-2', 'dw-3', 'dw-4'].includes(id!))).toEqual([]);
  }, 20_000);
});
