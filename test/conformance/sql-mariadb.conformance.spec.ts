import { createConnection, type Connection } from 'mysql2/promise';
import { createPool } from 'mysql2';
import { MYSQL_URL, requireMariaDb } from '../support/mariadb';
import { describeSinkConformance } from '../support/sink-conformance';
import { TcpProxy } from '../support/tcp-proxy';
import { SQL_CONNECT_TIMEOUT_MS, sqlTarget } from '../support/sql-target';

/**
 * SqlSink into MariaDB (the machine's server, database `test`) through the app's `mysql2` pool,
 * registered as a provider and found by its token, through a TCP proxy that the outage cuts and the
 * black hole silences. Each test writes a table of its own; a CHECK constraint refuses the poison row.
 */
const RUN = `dw_conf_my_${process.pid}`;
const url = new URL(MYSQL_URL);
let proxy: TcpProxy;
let admin: Connection;

beforeAll(async () => {
  await requireMariaDb();
  admin = await createConnection({ uri: MYSQL_URL });
  proxy = new TcpProxy(Number(url.port || 3306), url.hostname);
  await proxy.listen();
});
afterAll(async () => {
  await proxy?.close();
  await admin?.end();
});

describeSinkConformance(
  sqlTarget({
    name: 'SqlSink (MariaDB, a mysql2 pool by token)',
    run: RUN,
    ddl: (table) => `CREATE TABLE ${table} (id varchar(64) PRIMARY KEY, mark varchar(255) NOT NULL, poison boolean NOT NULL, CONSTRAINT no_poison CHECK (NOT poison))`,
    query: async (text) => (await admin.query(text))[0] as Array<Record<string, unknown>>,
    client: () => {
      const pool = createPool({ host: '127.0.0.1', port: proxy.port, user: url.username, database: url.pathname.slice(1), connectionLimit: 5, connectTimeout: SQL_CONNECT_TIMEOUT_MS });
      return { client: pool, close: () => new Promise<void>((resolve) => pool.end(() => resolve())) };
    },
    proxy: () => proxy,
    // the cut resets connections and closes new ones at once: mysql2's PROTOCOL_CONNECTION_LOST, a socket's ECONNRESET;
    // a statement cut short by writeTimeoutMs is ETIMEDOUT
    outageCodes: ['PROTOCOL_CONNECTION_LOST', 'ECONNRESET', 'ETIMEDOUT', 'ENOTCONN'],
  }),
);
