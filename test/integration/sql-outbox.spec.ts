import { Controller, Inject, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import knexFactory, { type Knex } from 'knex';
import { createPool as createMysqlPool } from 'mysql2';
import { DeferredWorkModule } from 'nestjs-deferred-work';
import { DeferredOutbox, DeferredOutboxModule } from 'nestjs-deferred-work/sql';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { eventually } from '../support/eventually';
import { MYSQL_URL, requireMariaDb } from '../support/mariadb';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { PG_URL, requirePostgres } from '../support/postgres';
import { RecordingSink } from '../support/recording.sink';
import { mysqlTestPool, pgTestPool, type TestSqlPool } from '../support/sql-pools';

/**
 * The transactional outbox against the machine's PostgreSQL and MariaDB: items written through the
 * caller's own transaction (TypeORM, Knex, pg, mysql2) exist only if it commits; the relay delivers
 * committed rows to the module's sinks and deletes them; two instances relaying one table at once
 * deliver every row once between them. (The crash cases run as processes: sql-outbox-crash.spec.ts.)
 */
failOnUnhandledRejection();
const RUN = `dw_outbox_${process.pid}`;
let n = 0;
const TOKEN = 'APP_DB';

interface Db {
  name: 'postgres' | 'mariadb';
  query(text: string): Promise<Array<Record<string, unknown>>>;
  /** The app's client (registered under TOKEN) and how it opens a transaction for the test. */
  client(): TestSqlPool;
}

const pgAdmin = new pg.Pool({ connectionString: PG_URL, max: 2 });
const mysqlAdmin = createMysqlPool({ uri: MYSQL_URL, connectionLimit: 2 }).promise();

const postgres: Db = {
  name: 'postgres',
  query: async (text) => (await pgAdmin.query(text)).rows,
  client: () => pgTestPool(PG_URL),
};

const mariadb: Db = {
  name: 'mariadb',
  query: async (text) => (await mysqlAdmin.query(text))[0] as Array<Record<string, unknown>>,
  client: () => mysqlTestPool(MYSQL_URL),
};

beforeAll(async () => {
  await requirePostgres();
  await requireMariaDb();
});
afterAll(async () => {
  await pgAdmin.end();
  await mysqlAdmin.end();
});

async function outboxApp(db: Db, table: string, sink: RecordingSink, extra: { relay?: boolean; createTable?: boolean } = {}) {
  const own = db.client();
  const moduleRef = await Test.createTestingModule({
    imports: [
      DeferredWorkModule.forRoot({ sinks: [sink] }),
      DeferredOutboxModule.forRoot({ client: TOKEN, table, createTable: extra.createTable ?? true, relay: extra.relay ?? true, pollIntervalMs: 20 }),
    ],
    providers: [{ provide: TOKEN, useValue: own.client }],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return { app, outbox: app.get(DeferredOutbox), ...own, close: async () => (await app.close(), await own.close()) };
}

const ids = (sink: RecordingSink) => sink.items.map((item) => item.id!);

describe.each([postgres, mariadb])('DeferredOutbox on $name', (db) => {
  let table: string;
  beforeEach(async () => {
    table = `${RUN}_${++n}`;
    await db.query(`DROP TABLE IF EXISTS ${table}`);
  });
  afterEach(async () => {
    await db.query(`DROP TABLE IF EXISTS ${table}`);
  });

  it('a committed transaction: its items are delivered by the relay, with the ids add() returned, and the rows deleted', async () => {
    const sink = new RecordingSink('jobs');
    const app = await outboxApp(db, table, sink);
    try {
      const written: string[] = [];
      for (let i = 0; i < 20; i++) {
        await app.transaction(async (tx) => {
          written.push(...(await app.outbox.add(tx, (work) => {
            work.job('mail', 'welcome', { user: i });
            work.log('info', 'signed up', { user: i });
          })));
        });
      }
      await eventually(() => expect(ids(sink).sort()).toEqual([...written].sort()), 10_000, 20);
      await eventually(async () => expect(await db.query(`SELECT id FROM ${table}`)).toEqual([]), 5000, 20);
      expect(sink.items.find((item) => item.kind === 'job')).toMatchObject({ queue: 'mail', name: 'welcome', data: { user: 0 } });
      expect(app.outbox.stats()).toMatchObject({ relaying: true, claimed: 40, delivered: 40, deadLettered: 0, released: 0 });
    } finally {
      await app.close();
    }
  });

  it('a rolled-back transaction leaves no row and delivers nothing', async () => {
    const sink = new RecordingSink('jobs');
    const app = await outboxApp(db, table, sink);
    try {
      await expect(
        app.transaction(async (tx) => {
          await app.outbox.job(tx, 'mail', 'welcome', { user: 'rolled back' });
          throw new Error('the business write failed');
        }),
      ).rejects.toThrow('the business write failed');
      await app.transaction(async (tx) => void (await app.outbox.job(tx, 'mail', 'welcome', { user: 'committed' })));
      await eventually(() => expect(sink.items).toHaveLength(1), 10_000, 20);
      await new Promise((r) => setTimeout(r, 200)); // ten more rounds of the relay
      expect(sink.items.map((item) => (item.kind === 'job' ? item.data : undefined))).toEqual([{ user: 'committed' }]);
      expect(await db.query(`SELECT id FROM ${table}`)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('two instances relaying one table at once deliver every row exactly once between them', async () => {
    const a = new RecordingSink('jobs');
    const b = new RecordingSink('jobs');
    const one = await outboxApp(db, table, a);
    const two = await outboxApp(db, table, b, { createTable: false });
    try {
      const written: string[] = [];
      // Both write while both relay: 40 transactions of 25 items each.
      await Promise.all(
        [one, two].map(async (app, k) => {
          for (let t = 0; t < 20; t++) {
            await app.transaction(async (tx) => {
              written.push(...(await app.outbox.add(tx, (work) => {
                for (let i = 0; i < 25; i++) work.job('q', 'j', { k, t, i });
              })));
            });
          }
        }),
      );
      await eventually(() => expect(ids(a).length + ids(b).length).toBeGreaterThanOrEqual(written.length), 20_000, 50);
      const all = [...ids(a), ...ids(b)];
      expect(new Set(all).size).toBe(all.length); // none twice
      expect(all.sort()).toEqual([...written].sort());
      expect(ids(a).length).toBeGreaterThan(0);
      expect(ids(b).length).toBeGreaterThan(0);
      await eventually(async () => expect(await db.query(`SELECT id FROM ${table}`)).toEqual([]), 5000, 20);
    } finally {
      await one.close();
      await two.close();
    }
  }, 60_000);

  it('refuses a handle that is not in a transaction, and an item that is not valid, writing nothing', async () => {
    const sink = new RecordingSink('jobs');
    const app = await outboxApp(db, table, sink);
    try {
      await expect(app.outbox.job({}, 'mail', 'welcome', {})).rejects.toThrow(/not a transaction it can write through/);
      await app.transaction(async (tx) => {
        await expect(app.outbox.add(tx, (work) => work.metric('m', Number.NaN))).rejects.toThrow(/value/);
      });
      expect(await db.query(`SELECT id FROM ${table}`)).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe('DeferredOutbox through TypeORM and Knex transactions (PostgreSQL)', () => {
  it('TypeORM: dataSource.transaction(manager => …) commits its items; dataSource.manager outside a transaction is refused', async () => {
    const table = `${RUN}_${++n}`;
    const dataSource = await new DataSource({ type: 'postgres', url: PG_URL }).initialize();
    const sink = new RecordingSink('jobs');
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({ sinks: [sink] }), DeferredOutboxModule.forRoot({ client: dataSource, table, createTable: true, pollIntervalMs: 20 })],
    }).compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();
    try {
      const outbox = app.get(DeferredOutbox);
      let id = '';
      await dataSource.transaction(async (manager) => {
        id = await outbox.job(manager, 'mail', 'welcome', { via: 'typeorm' });
      });
      await expect(outbox.job(dataSource.manager, 'mail', 'welcome', {})).rejects.toThrow(/not in a transaction/);
      await eventually(() => expect(ids(sink)).toEqual([id]), 10_000, 20);
    } finally {
      await app.close();
      await dataSource.query(`DROP TABLE IF EXISTS ${table}`);
      await dataSource.destroy();
    }
  });

  it('Knex: knex.transaction(trx => …) commits its items, a rollback leaves none; knex itself is refused', async () => {
    const table = `${RUN}_${++n}`;
    const knex: Knex = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 3 } });
    const sink = new RecordingSink('jobs');
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({ sinks: [sink] }), DeferredOutboxModule.forRoot({ client: knex, table, createTable: true, pollIntervalMs: 20 })],
    }).compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();
    try {
      const outbox = app.get(DeferredOutbox);
      const id = await knex.transaction((trx) => outbox.job(trx, 'mail', 'welcome', { via: 'knex' }));
      await expect(knex.transaction(async (trx) => (await outbox.job(trx, 'mail', 'x', {}), Promise.reject(new Error('rollback'))))).rejects.toThrow('rollback');
      await expect(outbox.job(knex, 'mail', 'welcome', {})).rejects.toThrow(/not in a transaction/);
      await eventually(() => expect(ids(sink)).toEqual([id]), 10_000, 20);
      await new Promise((r) => setTimeout(r, 200));
      expect(ids(sink)).toEqual([id]);
    } finally {
      await app.close();
      await knex.raw(`DROP TABLE IF EXISTS ${table}`);
      await knex.destroy();
    }
  });
});

@Controller('orders')
class OrdersController {
  constructor(
    @Inject(DeferredOutbox) private readonly outbox: DeferredOutbox,
    @Inject(TOKEN) private readonly pool: pg.Pool,
  ) {}

  @Post(':n')
  async place(@Param('n') n: string) {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const id = await this.outbox.job(client, 'mail', 'order-placed', { order: Number(n) });
      await client.query('COMMIT');
      return { id };
    } finally {
      client.release();
    }
  }
}

describe.each(platforms)('DeferredOutbox in a request handler ($name)', (platform) => {
  it('each POST commits one row in its handler; the relay delivers them all after', async () => {
    const table = `${RUN}_${++n}`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 5 });
    const sink = new RecordingSink('jobs');
    const started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink] }), DeferredOutboxModule.forRoot({ client: TOKEN, table, createTable: true, pollIntervalMs: 20 })],
      controllers: [OrdersController],
      providers: [{ provide: TOKEN, useValue: pool }],
    });
    try {
      const answered: string[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await fetch(`${started.url}/orders/${i}`, { method: 'POST' });
        expect(res.status).toBe(201);
        answered.push(((await res.json()) as { id: string }).id);
      }
      await eventually(() => expect(ids(sink).sort()).toEqual(answered.sort()), 10_000, 20);
    } finally {
      await started.close();
      await pgAdmin.query(`DROP TABLE IF EXISTS ${table}`);
      await pool.end();
    }
  });
});
