import { Test } from '@nestjs/testing';
import { DeferredWorkModule } from 'nestjs-deferred-work';
import { DeferredOutboxModule, SqlSink } from 'nestjs-deferred-work/sql';
import { MYSQL_URL, requireMariaDb } from '../support/mariadb';
import { failOnUnhandledRejection } from '../support/platforms';
import { PG_URL, requirePostgres } from '../support/postgres';
import { RecordingSink } from '../support/recording.sink';
import { mysqlTestPool, pgTestPool, type TestSqlPool, withPort } from '../support/sql-pools';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * The bootstrap against a database that takes connections and never answers (a black hole between the
 * app and the server, through a TCP proxy): `SqlSink` and `DeferredOutboxModule` fail `app.init()` once
 * `bootstrapTimeoutMs` has passed, saying the database did not answer, instead of holding it forever
 * (`pg` has no connection or query timeout by default; `mysql2` gives up on a connection after 10 s,
 * longer than each case may take).
 * Against the machine's PostgreSQL and MariaDB.
 */
failOnUnhandledRejection();
const TOKEN = 'APP_DB';
const TIMEOUT_MS = 1000;
const NO_ANSWER = `the database did not answer within ${TIMEOUT_MS} ms (bootstrapTimeoutMs)`;
/**
 * Each case's bound: the bootstrap's 1 s, a second at most for a pool the sink opened, and slack for a
 * loaded host — under mysql2's 10 s connect timeout, so a close that waited for it would fail the case.
 */
const CASE_TIMEOUT_MS = 8000;

interface Db {
  name: string;
  url: string;
  pool(url: string): TestSqlPool;
}

const postgres: Db = { name: 'postgres', url: PG_URL, pool: (url) => pgTestPool(url, 2) };
const mariadb: Db = { name: 'mariadb', url: MYSQL_URL, pool: (url) => mysqlTestPool(url, 2) };

async function init(imports: unknown[], client?: object): Promise<void> {
  const moduleRef = await Test.createTestingModule({ imports: imports as never[], providers: client ? [{ provide: TOKEN, useValue: client }] : [] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  try {
    await app.init();
  } finally {
    await app.close().catch(() => undefined);
  }
}

beforeAll(async () => {
  await requirePostgres();
  await requireMariaDb();
});

describe.each([postgres, mariadb])('bootstrap with $name not answering', (db) => {
  let proxy: TcpProxy;
  let pool: TestSqlPool;
  beforeEach(async () => {
    proxy = new TcpProxy(Number(new URL(db.url).port || (db === postgres ? 5432 : 3306)));
    await proxy.listen();
    await proxy.blackhole.on();
    pool = db.pool(withPort(db.url, proxy.port));
  });
  afterEach(async () => {
    await proxy.blackhole.off();
    await proxy.close();
    await pool.close().catch(() => undefined);
  });

  it("SqlSink through the app's pool: app.init() fails after bootstrapTimeoutMs, saying so", async () => {
    const sink = new SqlSink({ client: TOKEN, createTable: true, bootstrapTimeoutMs: TIMEOUT_MS });
    await expect(init([DeferredWorkModule.forRoot({ sinks: [sink] })], pool.client)).rejects.toThrow(NO_ANSWER);
  }, CASE_TIMEOUT_MS);

  it('SqlSink from a connection string (its own pool): the same, and its pool is not waited on', async () => {
    const sink = new SqlSink({ client: withPort(db.url, proxy.port), createTable: true, bootstrapTimeoutMs: TIMEOUT_MS });
    await expect(init([DeferredWorkModule.forRoot({ sinks: [sink] })])).rejects.toThrow(NO_ANSWER);
  }, CASE_TIMEOUT_MS);

  it('DeferredOutboxModule: app.init() fails after bootstrapTimeoutMs, saying so', async () => {
    const outbox = DeferredOutboxModule.forRoot({ client: TOKEN, createTable: true, bootstrapTimeoutMs: TIMEOUT_MS });
    await expect(init([DeferredWorkModule.forRoot({ sinks: [new RecordingSink('jobs')] }), outbox], pool.client)).rejects.toThrow(NO_ANSWER);
  }, CASE_TIMEOUT_MS);
});
