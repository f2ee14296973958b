import pg from 'pg';
import { SqlSink } from 'nestjs-deferred-work/sql';
import { PG_URL, requirePostgres } from '../support/postgres';
import { describeSinkConformance } from '../support/sink-conformance';
import { TcpProxy } from '../support/tcp-proxy';
import { SQL_CONNECT_TIMEOUT_MS, sqlTarget } from '../support/sql-target';

/**
 * SqlSink into PostgreSQL (the machine's server, database `test`) through the app's `pg` Pool,
 * registered as a provider and found by its token, through a TCP proxy that the outage cuts and the
 * black hole silences. Each test writes a table of its own; a CHECK constraint refuses the poison row.
 */
const RUN = `dw_conf_pg_${process.pid}`;
const url = new URL(PG_URL);
let proxy: TcpProxy;
let admin: pg.Client;

beforeAll(async () => {
  await requirePostgres();
  admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  proxy = new TcpProxy(Number(url.port || 5432), url.hostname);
  await proxy.listen();
});
afterAll(async () => {
  await proxy?.close();
  await admin?.end();
});

describeSinkConformance(
  sqlTarget({
    name: 'SqlSink (PostgreSQL, a pg Pool by token)',
    run: RUN,
    ddl: (table) => `CREATE TABLE ${table} (id text PRIMARY KEY, mark text NOT NULL, poison boolean NOT NULL CONSTRAINT no_poison CHECK (NOT poison))`,
    query: async (text) => (await admin.query(text)).rows,
    client: () => {
      const pool = new pg.Pool({ host: '127.0.0.1', port: proxy.port, user: url.username, database: url.pathname.slice(1), max: 5, connectionTimeoutMillis: SQL_CONNECT_TIMEOUT_MS });
      pool.on('error', () => undefined); // an idle client reset by the outage (the app's own pool would log it)
      return { client: pool, close: () => pool.end() };
    },
    proxy: () => proxy,
    // the cut resets connections and closes new ones at once: pg's codeless "Connection terminated unexpectedly" (ECONNRESET) or
    // a socket's ECONNRESET; a statement cut short by writeTimeoutMs is ETIMEDOUT
    outageCodes: ['ECONNRESET', 'ETIMEDOUT', 'ENOTCONN'],
  }),
);
