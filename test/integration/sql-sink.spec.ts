import { Controller, Get, Param, Query } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import knexFactory, { type Knex } from 'knex';
import { createPool as createMysqlPool, type Pool as MysqlPool } from 'mysql2';
import { createConnection, type Connection } from 'mysql2/promise';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, type JobItem, type LogItem } from 'nestjs-deferred-work';
import { SqlSink } from 'nestjs-deferred-work/sql';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { eventually } from '../support/eventually';
import { range, load } from '../support/load';
import { MYSQL_URL, requireMariaDb } from '../support/mariadb';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { PG_URL, requirePostgres } from '../support/postgres';

/**
 * SqlSink against the machine's PostgreSQL and MariaDB: N requests → N rows through each kind of
 * client the app may have (pg Pool, mysql2 pool, TypeORM DataSource, Knex) on both adapters; ids
 * written twice stored once and counted; one bad row of 100 isolated; the app's pool shared with
 * handlers under a backlog; bootstrap errors for a bad setup. The link cut, black-holed and the
 * backlog at shutdown are in test/conformance/sql-*.conformance.spec.ts.
 */
failOnUnhandledRejection();
const RUN = `dw_sql_${process.pid}`;
let tables = 0;
const nextTable = () => `${RUN}_${++tables}`;

let pgAdmin: pg.Client;
let myAdmin: Connection;
const dropped: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  await Promise.all([requirePostgres(), requireMariaDb()]);
  pgAdmin = new pg.Client({ connectionString: PG_URL });
  await pgAdmin.connect();
  myAdmin = await createConnection({ uri: MYSQL_URL });
});
afterAll(async () => {
  for (const drop of dropped) await drop().catch(() => undefined);
  await pgAdmin?.end();
  await myAdmin?.end();
});

type Dialect = 'postgres' | 'mysql';
const admin = {
  query: async (dialect: Dialect, text: string): Promise<Array<Record<string, unknown>>> =>
    dialect === 'postgres' ? (await pgAdmin.query(text)).rows : ((await myAdmin.query(text))[0] as Array<Record<string, unknown>>),
  table(dialect: Dialect, ddl: (name: string) => string): Promise<string> {
    const name = nextTable();
    dropped.push(() => admin.query(dialect, `DROP TABLE IF EXISTS ${name}`));
    return admin.query(dialect, ddl(name)).then(() => name);
  },
};

/** The app's clients, each opened for one test and closed after it. */
const clients: Record<string, { dialect: Dialect; open(): Promise<{ client: object; close(): Promise<void> }> }> = {
  'a pg Pool': {
    dialect: 'postgres',
    open: async () => {
      const pool = new pg.Pool({ connectionString: PG_URL, max: 5 });
      return { client: pool, close: () => pool.end() };
    },
  },
  'a mysql2 pool': {
    dialect: 'mysql',
    open: async () => {
      const pool = createMysqlPool({ uri: MYSQL_URL, connectionLimit: 5 });
      return { client: pool, close: () => new Promise<void>((resolve) => pool.end(() => resolve())) };
    },
  },
  'a TypeORM DataSource (postgres)': {
    dialect: 'postgres',
    open: async () => {
      const source = await new DataSource({ type: 'postgres', url: PG_URL, poolSize: 5 }).initialize();
      return { client: source, close: () => source.destroy() };
    },
  },
  'a TypeORM DataSource (mariadb)': {
    dialect: 'mysql',
    open: async () => {
      const source = await new DataSource({ type: 'mariadb', url: MYSQL_URL, poolSize: 5 }).initialize();
      return { client: source, close: () => source.destroy() };
    },
  },
  'Knex (pg)': {
    dialect: 'postgres',
    open: async () => {
      const knex = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 5 } });
      return { client: knex as unknown as object, close: () => knex.destroy() };
    },
  },
  'Knex (mysql2)': {
    dialect: 'mysql',
    open: async () => {
      const knex = knexFactory({ client: 'mysql2', connection: MYSQL_URL, pool: { min: 0, max: 5 } });
      return { client: knex as unknown as object, close: () => knex.destroy() };
    },
  },
};

@Controller()
class RowsController {
  @Get('rows/:mark')
  @AfterResponse()
  rows(@Param('mark') mark: string, @Query('n') n: string | undefined, @Deferred() work: DeferredScope) {
    for (let i = 0; i < Number(n ?? 1); i++) work.log('info', 'row', { mark: `${mark}-${i}` });
    return { mark };
  }
}

const TOKEN = 'APP_DATABASE';

describe.each(platforms)('SqlSink ($name)', (platform) => {
  describe.each(Object.keys(clients))('through %s, found by its token', (kind) => {
    it('50 requests give 50 rows of the default table (created at bootstrap), each once', async () => {
      const { dialect } = clients[kind];
      const { client, close } = await clients[kind].open();
      const table = nextTable();
      dropped.push(() => admin.query(dialect, `DROP TABLE IF EXISTS ${table}`));
      const started = await startApp(platform, {
        imports: [DeferredWorkModule.forRoot({ sinks: [new SqlSink({ client: TOKEN, table, createTable: true })] })],
        controllers: [RowsController],
        providers: [{ provide: TOKEN, useValue: client }],
      });
      try {
        const statuses = await load(started.url, range(0, 50).map((i) => `/rows/m${i}`), 10);
        expect(statuses.every((s) => s === 200)).toBe(true);
        const work = started.app.get(DeferredWork);
        await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 50, delivered: 50, pending: 0, deadLettered: 0 }), 15_000);
        const rows = await admin.query(dialect, `SELECT id, kind, name, payload, created_at FROM ${table}`);
        expect(rows).toHaveLength(50);
        const marks = rows.map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload).fields.mark).sort();
        expect(marks).toEqual(range(0, 50).map((i) => `m${i}-0`).sort());
        expect(rows.every((r) => r.kind === 'log' && r.name === 'info' && String(r.id).startsWith('dw-'))).toBe(true);
      } finally {
        await started.close();
        await close();
      }
    }, 60_000);
  });
});

describe.each(['postgres', 'mysql'] as const)('SqlSink writes on %s', (dialect) => {
  const open = () => clients[dialect === 'postgres' ? 'a pg Pool' : 'a mysql2 pool'].open();
  const item = (mark: string, extra: Record<string, unknown> = {}, id?: string): LogItem => ({ kind: 'log', level: 'info', message: 'm', fields: { mark, ...extra }, when: 'always', createdAt: Date.now(), id });
  const signal = () => new AbortController().signal;
  const row = (i: LogItem) => ({ id: i.id, mark: String(i.fields!.mark), poison: i.fields!.poison === true });
  const ddl =
    dialect === 'postgres'
      ? (t: string) => `CREATE TABLE ${t} (id text PRIMARY KEY, mark text NOT NULL, poison boolean NOT NULL CONSTRAINT ${t}_no_poison CHECK (NOT poison))`
      : (t: string) => `CREATE TABLE ${t} (id varchar(64) PRIMARY KEY, mark varchar(255) NOT NULL, poison boolean NOT NULL, CONSTRAINT ${t}_no_poison CHECK (NOT poison))`;

  it('a row written again (the same item id) is stored once and reported as a duplicate, not a failure', async () => {
    const { client, close } = await open();
    const table = await admin.table(dialect, ddl);
    const sink = new SqlSink({ client, table, columns: ['id', 'mark', 'poison'], row: row as never });
    try {
      await sink.attach(sinkAttachContext());
      const [a, b, c] = [item('a'), item('b'), item('c')];
      expect(await sink.write([a, b], { signal: signal(), attempt: 1 })).toBeUndefined();
      // a retry after a lost reply, a spool replay: a and b again, with c new
      expect(await sink.write([b, c, a], { signal: signal(), attempt: 2 })).toEqual({ duplicates: [0, 2] });
      const rows = await admin.query(dialect, `SELECT mark FROM ${table} ORDER BY mark`);
      expect(rows.map((r) => r.mark)).toEqual(['a', 'b', 'c']);
    } finally {
      await close();
    }
  });

  it('one bad row of 100: 99 rows written once, the bad one failed for good with the constraint named and the server code', async () => {
    const { client, close } = await open();
    const table = await admin.table(dialect, ddl);
    const sink = new SqlSink({ client, table, columns: ['id', 'mark', 'poison'], row: row as never });
    try {
      await sink.attach(sinkAttachContext());
      const batch = range(0, 100).map((i) => item(`r${i}`, i === 37 ? { poison: true } : {}));
      const result = await sink.write(batch, { signal: signal(), attempt: 1 });
      expect(result?.failed).toHaveLength(1);
      const [failure] = result!.failed!;
      expect(failure).toMatchObject({ index: 37, retryable: false, code: dialect === 'postgres' ? '23514' : '4025' });
      expect(String((failure.error as Error).message)).toContain(`${table}_no_poison`);
      const rows = await admin.query(dialect, `SELECT mark FROM ${table}`);
      expect(rows).toHaveLength(99);
      expect(rows.map((r) => r.mark)).not.toContain('r37');
    } finally {
      await close();
    }
  });

  it('a row that clashes with another on a unique key other than the id is failed for good with the key named, not counted delivered; the rest written once', async () => {
    const { client, close } = await open();
    const table = await admin.table(dialect, (t) =>
      dialect === 'postgres'
        ? `CREATE TABLE ${t} (id text PRIMARY KEY, mark text NOT NULL CONSTRAINT ${t}_mark UNIQUE, poison boolean NOT NULL)`
        : `CREATE TABLE ${t} (id varchar(64) PRIMARY KEY, mark varchar(255) NOT NULL, poison boolean NOT NULL, CONSTRAINT ${t}_mark UNIQUE (mark))`,
    );
    const sink = new SqlSink({ client, table, columns: ['id', 'mark', 'poison'], row: row as never });
    try {
      await sink.attach(sinkAttachContext());
      const [a, b, c] = [item('x'), item('x'), item('y')];
      expect(await sink.write([a], { signal: signal(), attempt: 1 })).toBeUndefined();
      // b has a new id but the mark a holds; a again is a duplicate
      const result = await sink.write([b, c, a], { signal: signal(), attempt: 1 });
      expect(result?.duplicates).toEqual([2]);
      expect(result?.failed).toHaveLength(1);
      expect(result!.failed![0]).toMatchObject({ index: 0, retryable: false, code: dialect === 'postgres' ? '23505' : '1062' });
      expect(String((result!.failed![0].error as Error).message)).toContain(`${table}_mark`);
      const rows = await admin.query(dialect, `SELECT id, mark FROM ${table} ORDER BY mark`);
      expect(rows).toEqual([
        { id: a.id, mark: 'x' },
        { id: c.id, mark: 'y' },
      ]);
    } finally {
      await close();
    }
  });

  it('a row whose id is committed by another writer while the insert waits on its lock is a duplicate; the rest written once', async () => {
    const { client, close } = await open();
    const table = await admin.table(dialect, ddl);
    const sink = new SqlSink({ client, table, columns: ['id', 'mark', 'poison'], row: row as never });
    // Another writer of the same item (a write given up on at its timeout, committing late), its transaction open.
    const other = dialect === 'postgres' ? new pg.Client({ connectionString: PG_URL }) : undefined;
    await other?.connect();
    const otherMy = dialect === 'mysql' ? await createConnection({ uri: MYSQL_URL }) : undefined;
    const writer = (text: string) => (other ? other.query(text) : otherMy!.query(text));
    const [d, e] = [item('d', {}, `${RUN}-race-d`), item('e')];
    try {
      await sink.attach(sinkAttachContext());
      await writer(dialect === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
      await writer(`INSERT INTO ${table} (id, mark, poison) VALUES ('${d.id}', 'other', false)`);
      const written = sink.write([d, e], { signal: signal(), attempt: 2 });
      written.catch(() => undefined); // awaited below; not an unhandled rejection should the wait fail first
      // the sink's insert waits on the uncommitted row's lock (seen from a third connection, outside any transaction)
      const waiting =
        dialect === 'postgres'
          ? `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "${table}"%'`
          : `SELECT count(*) AS n FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE 'INSERT INTO \`${table}\`%'`;
      await eventually(async () => expect(Number((await admin.query(dialect, waiting))[0].n)).toBe(1), 10_000, 150);
      await writer('COMMIT');
      expect(await written).toEqual({ duplicates: [0] });
      const rows = await admin.query(dialect, `SELECT id, mark FROM ${table} ORDER BY mark`);
      expect(rows).toEqual([
        { id: e.id, mark: 'e' },
        { id: d.id, mark: 'other' },
      ]);
    } finally {
      await other?.end();
      await otherMy?.end();
      await close();
    }
  });

  if (dialect === 'mysql') {
    it("an id the column's collation takes for one already there ('A' for 'a') is failed for good with the key named, not retried without end; the rest written once", async () => {
      const { client, close } = await open();
      const table = await admin.table(dialect, (t) => `CREATE TABLE ${t} (id varchar(64) COLLATE utf8mb4_general_ci PRIMARY KEY, mark varchar(255) NOT NULL, poison boolean NOT NULL)`);
      const sink = new SqlSink({ client, table, columns: ['id', 'mark', 'poison'], row: row as never });
      try {
        await sink.attach(sinkAttachContext());
        await admin.query(dialect, `INSERT INTO ${table} (id, mark, poison) VALUES ('${RUN}-CASE', 'upper', false)`);
        const [lower, other] = [item('lower', {}, `${RUN}-case`), item('other')];
        const result = await sink.write([lower, other], { signal: signal(), attempt: 1 });
        expect(result?.failed).toHaveLength(1);
        expect(result!.failed![0]).toMatchObject({ index: 0, retryable: false, code: '1062' });
        const rows = await admin.query(dialect, `SELECT mark FROM ${table} ORDER BY mark`);
        expect(rows.map((r) => r.mark)).toEqual(['other', 'upper']);
      } finally {
        await close();
      }
    });
  }

  it('bootstrap errors say what to fix: a missing table, a missing column, an id without a unique index, a token with nothing behind it', async () => {
    const { client, close } = await open();
    const noUnique = await admin.table(dialect, (t) => `CREATE TABLE ${t} (id varchar(64), mark text, poison boolean)`);
    const boot = (sink: SqlSink) =>
      Test.createTestingModule({ imports: [DeferredWorkModule.forRoot({ sinks: [sink] })], providers: [{ provide: TOKEN, useValue: client }] })
        .compile()
        .then(async (moduleRef) => {
          const app = moduleRef.createNestApplication(undefined as never, { logger: false });
          try {
            await app.init();
          } finally {
            await app.close();
          }
        });
    try {
      await expect(boot(new SqlSink({ client: TOKEN, table: `${RUN}_missing` }))).rejects.toThrow(`table ${RUN}_missing does not exist`);
      const table = await admin.table(dialect, ddl);
      await expect(boot(new SqlSink({ client: TOKEN, table, columns: ['id', 'mark', 'body'], row: () => ({}) as never }))).rejects.toThrow(`table ${table} has no column "body"`);
      await expect(boot(new SqlSink({ client: TOKEN, table: noUnique, columns: ['id', 'mark'], row: () => ({}) as never }))).rejects.toThrow('has no unique index of its own');
      if (dialect === 'postgres') {
        // PostgreSQL's ON CONFLICT (id) cannot use a partial or a deferrable unique index: every write would fail
        const partial = await admin.table(dialect, (t) => `CREATE TABLE ${t} (id text, mark text, poison boolean); CREATE UNIQUE INDEX ${t}_id ON ${t} (id) WHERE mark IS NOT NULL`);
        const deferrable = await admin.table(dialect, (t) => `CREATE TABLE ${t} (id text, mark text, poison boolean, CONSTRAINT ${t}_id UNIQUE (id) DEFERRABLE)`);
        for (const table of [partial, deferrable]) {
          await expect(boot(new SqlSink({ client: TOKEN, table, columns: ['id', 'mark'], row: () => ({}) as never }))).rejects.toThrow('has no unique index of its own');
        }
        // a unique index with INCLUDE columns can be the arbiter: accepted
        const included = await admin.table(dialect, (t) => `CREATE TABLE ${t} (id text, mark text, poison boolean); CREATE UNIQUE INDEX ${t}_id ON ${t} (id) INCLUDE (mark)`);
        await expect(boot(new SqlSink({ client: TOKEN, table: included, columns: ['id', 'mark'], row: () => ({}) as never }))).resolves.toBeUndefined();
      }
      await expect(boot(new SqlSink({ client: 'NOT_REGISTERED', table }))).rejects.toThrow('nothing is registered as "NOT_REGISTERED"');
    } finally {
      await close();
    }
  });
});

describe('SqlSink on PostgreSQL: column types', () => {
  const open = () => clients['a pg Pool'].open();
  const signal = () => new AbortController().signal;
  const item = (mark: string, data: unknown): JobItem => ({ kind: 'job', queue: 'outbox', name: 'n', data, when: 'always', createdAt: Date.now(), id: `dw-${mark}` });

  it('a string for a jsonb column must be JSON text of one value: one that would add keys or rows to the batch is failed for good alone; the rest are written once', async () => {
    const { client, close } = await open();
    const table = await admin.table('postgres', (t) => `CREATE TABLE ${t} (id text PRIMARY KEY, topic text NOT NULL, body jsonb)`);
    const sink = new SqlSink({ client, table, columns: ['id', 'topic', 'body'], row: ((i: JobItem) => ({ id: i.id, topic: i.queue, body: i.data })) as never });
    try {
      await sink.attach(sinkAttachContext());
      const forged = '0,"topic":"admin.grant"},{"id":"forged","topic":"admin.grant","body":{}';
      const batch = [item('a', { n: 1 }), item('b', forged), item('c', '{"n":3}'), item('d', [1, 2])];
      const result = await sink.write(batch, { signal: signal(), attempt: 1 });
      expect(result?.failed?.map((f) => [f.index, f.retryable])).toEqual([[1, false]]);
      expect(String((result!.failed![0].error as Error).message)).toMatch(/column "body" is jsonb, and row\(item\) gave it a string that is not JSON text/);
      const rows = await admin.query('postgres', `SELECT id, topic, body FROM ${table} ORDER BY id`);
      expect(rows).toEqual([
        { id: 'dw-a', topic: 'outbox', body: { n: 1 } },
        { id: 'dw-c', topic: 'outbox', body: { n: 3 } },
        { id: 'dw-d', topic: 'outbox', body: [1, 2] },
      ]);
    } finally {
      await close();
    }
  });

  it('a failed bootstrap (a missing table) closes the pool the sink opened from a connection string', async () => {
    const app = `dw-leak-${process.pid}-${Date.now().toString(36)}`;
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${app}`;
    const sink = new SqlSink({ client: url, table: `no_such_table_${process.pid}` });
    await expect(sink.attach(sinkAttachContext())).rejects.toThrow(/does not exist|cannot read table/);
    const connections = async () => Number((await admin.query('postgres', `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = '${app}'`))[0].n);
    await eventually(async () => expect(await connections()).toBe(0), 3_000);
  });

  it('char(n), varchar(n) and numeric(p,s) columns take their values as the table declares them', async () => {
    const { client, close } = await open();
    const table = await admin.table('postgres', (t) => `CREATE TABLE ${t} (id text PRIMARY KEY, trace_id char(32) NOT NULL, code varchar(8) NOT NULL, amount numeric(10,2) NOT NULL)`);
    const sink = new SqlSink({ client, table, columns: ['id', 'trace_id', 'code', 'amount'], row: ((i: JobItem) => ({ id: i.id, trace_id: 'a'.repeat(32), code: 'EUR', amount: 99.5 })) as never });
    try {
      await sink.attach(sinkAttachContext());
      expect(await sink.write([item('a', {}), item('b', {})], { signal: signal(), attempt: 1 })).toBeUndefined();
      const rows = await admin.query('postgres', `SELECT trace_id, code, amount FROM ${table} ORDER BY id`);
      expect(rows).toEqual([
        { trace_id: 'a'.repeat(32), code: 'EUR', amount: '99.50' },
        { trace_id: 'a'.repeat(32), code: 'EUR', amount: '99.50' },
      ]);
    } finally {
      await close();
    }
  });
});

describe('SqlSink shares the app pool', () => {
  it('a pool of 5, handlers querying it, a backlog of 50,000 rows: the sink never holds more than maxConnections, every handler query gets a client', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 5 });
    // the sink takes connections with pool.connect() (a promise); pool.query() passes a callback
    let held = 0;
    let mostHeld = 0;
    const connect = pool.connect.bind(pool) as (callback?: unknown) => Promise<pg.PoolClient>;
    (pool as { connect: unknown }).connect = (callback?: unknown) => {
      if (callback) return connect(callback);
      mostHeld = Math.max(mostHeld, ++held);
      return connect().then(
        (client) => {
          const release = client.release.bind(client);
          client.release = (error?: Error | boolean) => {
            held--;
            return release(error);
          };
          return client;
        },
        (error: unknown) => {
          held--;
          throw error;
        },
      );
    };
    const latencies: number[] = [];
    @Controller()
    class QueryController {
      @Get('query')
      async query() {
        const started = performance.now();
        await pool.query('SELECT 1');
        latencies.push(performance.now() - started);
        return { ok: true };
      }
    }
    const table = nextTable();
    dropped.push(() => admin.query('postgres', `DROP TABLE IF EXISTS ${table}`));
    const started = await startApp(platforms[1], {
      imports: [DeferredWorkModule.forRoot({ sinks: [new SqlSink({ client: TOKEN, table, createTable: true })], sinkOptions: { sql: { maxQueueSize: 60_000 } } })],
      controllers: [RowsController, QueryController],
      providers: [{ provide: TOKEN, useValue: pool }],
    });
    try {
      const work = started.app.get(DeferredWork);
      const backlog = load(started.url, range(0, 100).map((i) => `/rows/b${i}?n=500`), 10);
      const queries = load(started.url, range(0, 300).map(() => '/query'), 10);
      const statuses = [...(await backlog), ...(await queries)];
      expect(statuses.every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 50_000, delivered: 50_000, pending: 0 }), 60_000);
      expect(mostHeld).toBe(1);
      expect((await admin.query('postgres', `SELECT count(*)::int AS n FROM ${table}`))[0].n).toBe(50_000);
      const sorted = [...latencies].sort((a, b) => a - b);
      console.log(`handler queries during the backlog: ${sorted.length}, p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, p99 ${sorted[Math.floor(sorted.length * 0.99)].toFixed(1)} ms`);
    } finally {
      await started.close();
      await pool.end();
    }
  }, 120_000);
});
