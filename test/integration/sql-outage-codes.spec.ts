import { Test } from '@nestjs/testing';
import { type DeadLetter, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { SqlSink } from 'nestjs-deferred-work/sql';
import { createPool } from 'mysql2';
import pg from 'pg';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection } from '../support/platforms';
import { PrivateMariaDb } from '../support/private-mariadb';
import { PrivatePostgres } from '../support/private-postgres';

/**
 * SqlSink while its database is really down (a private server, never the machine's, stopped and
 * started): every failure keeps its code — the dead letters (`code`, `firstError.code`) and
 * `stats().sinks.sql.lastErrorCode` — including the errors raised while getting a pool connection
 * (refused while the server is down, `57P03` while PostgreSQL starts up), which fail the whole write.
 * A short retry budget dead-letters the items written while the server is down (`expired`).
 *
 * The codes a restart may give, by where the write was when it happened:
 * - PostgreSQL: `ECONNREFUSED` (nothing listens), `57P01` (a fast shutdown ends the sessions),
 *   `57P03` (starting up), `ECONNRESET` (pg's codeless "Connection terminated unexpectedly").
 * - MariaDB: `ECONNREFUSED`, `1053` (ER_SERVER_SHUTDOWN), `PROTOCOL_CONNECTION_LOST` (mysql2: the
 *   server closed the connection), `ECONNRESET`.
 */
failOnUnhandledRejection();

interface Server {
  start(): Promise<void>;
  stop(): Promise<void>;
  dispose(): Promise<void>;
  readonly url: string;
}

interface Case {
  name: string;
  server: Server;
  codes: readonly string[];
  pool(url: string): { client: object; close(): Promise<void> };
}

const cases: Case[] = [
  {
    name: 'PostgreSQL (a pg Pool)',
    server: new PrivatePostgres(),
    codes: ['ECONNREFUSED', '57P01', '57P03', 'ECONNRESET'],
    pool: (url) => {
      const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 1000 });
      pool.on('error', () => undefined); // idle clients ended by the shutdown (an app logs these)
      return { client: pool, close: () => pool.end() };
    },
  },
  {
    name: 'MariaDB (a mysql2 pool)',
    server: new PrivateMariaDb(),
    codes: ['ECONNREFUSED', '1053', 'PROTOCOL_CONNECTION_LOST', 'ECONNRESET'],
    pool: (url) => {
      const pool = createPool({ uri: url, connectionLimit: 2, connectTimeout: 1000 });
      return { client: pool, close: () => new Promise<void>((resolve) => pool.end(() => resolve())) };
    },
  },
];

describe.each(cases)('SqlSink, $name stopped and started: every failure keeps its code', ({ server, codes, pool: makePool }) => {
  beforeAll(() => server.start(), 120_000);
  afterAll(() => server.dispose(), 60_000);

  it('items written while it is down are dead-lettered `expired` with the code of the failure, and the sink writes again once it is back', async () => {
    const pool = makePool(server.url);
    const moduleRef = await Test.createTestingModule({
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new SqlSink({ client: 'DB', table: 'dw_outage_codes', createTable: true })],
          // the dispatcher's default backoffs; a short retry budget, and a write timeout the restart does not reach
          sinkOptions: { sql: { maxRetryDurationMs: 1500, writeTimeoutMs: 3000 } },
        }),
      ],
      providers: [{ provide: 'DB', useValue: pool.client }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const work = app.get(DeferredWork);
      work.log('info', 'warm', { n: 0 });
      await eventually(async () => expect(work.stats().sinks.sql.delivered).toBe(1), 15_000);

      await server.stop();
      for (let n = 1; n <= 3; n++) work.log('info', 'while down', { n });
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 4, delivered: 1, deadLettered: 3, pending: 0 }), 20_000);
      const letters = work.deadLetters().filter((letter: DeadLetter) => letter.sink === 'sql');
      const seen = letters.map(({ reason, code, attempts, firstError, error }) => ({ reason, code, attempts, firstErrorCode: firstError?.code, error }));
      const known = (code: string | undefined) => code !== undefined && codes.includes(code);
      expect(seen.filter((l) => l.reason !== 'expired' || !known(l.code) || (l.attempts > 1 && !known(l.firstErrorCode)))).toEqual([]);
      expect(seen).toHaveLength(3);
      const { lastErrorCode, lastError } = work.stats().sinks.sql;
      expect({ lastErrorCode, lastError, known: known(lastErrorCode) }).toMatchObject({ known: true });

      await server.start();
      work.log('info', 'back', { n: 4 });
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 5, delivered: 2, deadLettered: 3, pending: 0 }), 20_000);
    } finally {
      await app.close();
      await pool.close();
    }
  }, 90_000);
});
