import { Test } from '@nestjs/testing';
import { DeferredWorkModule } from 'nestjs-deferred-work';
import { DeferredOutboxModule, SqlDeadLetterStore, SqlSink } from 'nestjs-deferred-work/sql';
import { outboxTableDdl } from '../../packages/nestjs-deferred-work/src/sinks/sql/outbox/outbox-statements';
import { deadLetterTableDdl } from '../../packages/nestjs-deferred-work/src/sinks/sql/sql-dead-letter.store';
import { defaultTableDdl } from '../../packages/nestjs-deferred-work/src/sinks/sql/sql-rows';
import { quoteTable } from '../../packages/nestjs-deferred-work/src/sinks/sql/sql-tables';
import { failOnUnhandledRejection } from '../support/platforms';
import { endAdmins, mariadb, postgres, type ReplicaClients, RUN, type Server, TOKEN } from '../support/sql-ddl-servers';

/**
 * Replicas booting together on an empty database, on the machine's PostgreSQL and MariaDB: each round
 * a fresh schema (PostgreSQL) or database (MariaDB), and four Nest apps, each with its own client (every
 * client shape the SQL code takes), started at once — each creating SqlSink's default table, the
 * outbox table and the dead-letter table. Every app starts, every dead-letter store opens, and the
 * schema holds exactly one table of each. The same DDL run raw from four connections at once (as it
 * ran before it took the library's lock) shows that the race is there to lose on PostgreSQL.
 */
failOnUnhandledRejection();

const ROUNDS = 10;
const REPLICAS = 4;
const TABLES = ['deferred_dead_letters', 'deferred_outbox', 'deferred_work'];

/** A dead-letter store that tells how its `open()` (called by the module, which only logs a failure) ended. */
class WatchedStore extends SqlDeadLetterStore {
  opened: Promise<'opened' | Error> | undefined;
  override open(): Promise<void> {
    const opening = super.open();
    this.opened = opening.then(() => 'opened' as const, (error: Error) => error);
    return opening;
  }
}

/** One replica: its own client, SqlSink (createTable), the outbox (createTable) and the SQL dead-letter store, started. */
async function replica(server: Server, shape: () => Promise<ReplicaClients>, space: string) {
  const clients = await shape();
  const store = new WatchedStore({ client: clients.provided, table: `${space}.deferred_dead_letters` });
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [
        DeferredWorkModule.forRoot({ sinks: [new SqlSink({ client: clients.client, table: `${space}.deferred_work`, createTable: true })], deadLetter: { store } }),
        DeferredOutboxModule.forRoot({ client: clients.client, table: `${space}.deferred_outbox`, createTable: true, pollIntervalMs: 50 }),
      ],
      providers: [{ provide: TOKEN, useValue: clients.provided }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const started = await app.init().then(
      () => 'started' as const,
      (error: Error) => error,
    );
    return { shape: clients.shape, app, started, opened: await store.opened, close: async () => (await app.close(), await clients.close()) };
  } catch (error) {
    await clients.close();
    throw error;
  }
}

const made = new Set<{ server: Server; space: string }>();
afterAll(async () => {
  for (const { server, space } of made) await server.drop(space).catch(() => undefined);
  await endAdmins();
});

describe.each([postgres, mariadb])('the library creates its tables while replicas boot together on $name', (server) => {
  beforeAll(() => server.require());

  const space = async (round: string) => {
    const name = `${RUN}_${server.dialect}_${round}`;
    made.add({ server, space: name });
    await server.drop(name);
    await server.create(name);
    return name;
  };

  /** The DDL each replica runs, as the library wrote it for `space`. */
  const ddl = (s: string) => [
    defaultTableDdl(server.dialect, quoteTable(server.dialect, `${s}.deferred_work`)),
    ...outboxTableDdl(server.dialect, quoteTable(server.dialect, `${s}.deferred_outbox`)),
    deadLetterTableDdl(server.dialect, quoteTable(server.dialect, `${s}.deferred_dead_letters`)),
  ];

  /** Failed statements of the DDL run raw (no lock: each statement on its own) from four connections at once, over ROUNDS rounds. */
  const rawRace = async () => {
    let failed = 0;
    let total = 0;
    const codes = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const s = await space(`raw${round}`);
      const connections = await Promise.all(Array.from({ length: REPLICAS }, () => server.connect()));
      try {
        const outcomes = await Promise.all(connections.map((c) => Promise.allSettled(ddl(s).map((text) => c.query(text)))));
        for (const outcome of outcomes.flat()) {
          total++;
          if (outcome.status === 'fulfilled') continue;
          failed++;
          const code = String((outcome.reason as { code?: unknown }).code);
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      } finally {
        await Promise.all(connections.map((c) => c.end()));
        await server.drop(s);
      }
    }
    return { failed, total, codes: Object.fromEntries(codes) };
  };

  if (server.dialect === 'postgres') {
    it(`without the lock, the same DDL from ${REPLICAS} connections at once fails on an empty schema (the race the replicas must not lose)`, async () => {
      const race = await rawRace();
      expect(race.total).toBe(ROUNDS * REPLICAS * 3);
      // 23505 (a duplicate row type in pg_type), 42P07 (the relation exists), 42710 (a duplicate object)
      expect(race.failed).toBeGreaterThan(0);
      expect(Object.keys(race.codes).every((code) => ['23505', '42P07', '42710'].includes(code))).toBe(true);
    }, 120_000);
  } else {
    it(`the same DDL raw from ${REPLICAS} connections at once: MariaDB holds its own lock on the table's name through CREATE TABLE, so none fails even without the library's`, async () => {
      expect(await rawRace()).toEqual({ failed: 0, total: ROUNDS * REPLICAS * 3, codes: {} });
    }, 120_000);
  }

  it(`${REPLICAS} replicas (each its own client: ${server.shapes.length} shapes in turn) started at once on an empty ${server.dialect === 'postgres' ? 'schema' : 'database'}, ${ROUNDS} rounds: all start, every store opens, one table of each`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const s = await space(`r${round}`);
      const settled = await Promise.allSettled(Array.from({ length: REPLICAS }, (_, i) => replica(server, server.shapes[(i + round) % server.shapes.length], s)));
      const replicas = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      try {
        const outcome = settled.map((r) => (r.status === 'fulfilled' ? `${r.value.shape}: ${r.value.started} / store ${r.value.opened}` : String(r.reason)));
        const expected = settled.map((r) => `${r.status === 'fulfilled' ? r.value.shape : 'a replica'}: started / store opened`);
        expect({ round, outcome }).toEqual({ round, outcome: expected });
        expect((await server.tables(s)).sort()).toEqual(TABLES);
      } finally {
        await Promise.all(replicas.map((r) => r.close()));
        await server.drop(s);
      }
    }
  }, 300_000);

  it('a DDL the database refuses (a login without the CREATE privilege) still fails the bootstrap with the error that says so, and leaves no lock behind: the next replica creates the table', async () => {
    const s = await space('denied');
    const reader = await server.reader(s);
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [DeferredWorkModule.forRoot({ sinks: [new SqlSink({ client: TOKEN, table: `${s}.deferred_work`, createTable: true })] })],
        providers: [{ provide: TOKEN, useValue: reader.pool }],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await expect(app.init()).rejects.toThrow(
        new RegExp(`cannot read table ${s}\\.deferred_work through a (pg Pool|mysql2 pool): (permission denied for schema|CREATE command denied).*Check that the database is up and the user may read it`),
      );
      await app.close().catch(() => undefined);
      expect(await server.ddlLockHeld()).toBe(false);
      const next = await replica(server, server.shapes[0], s);
      try {
        expect(`${next.started} / store ${next.opened}`).toBe('started / store opened');
      } finally {
        await next.close();
      }
      expect((await server.tables(s)).sort()).toEqual(TABLES);
    } finally {
      await reader.close();
      await server.drop(s);
    }
  }, 60_000);
});
