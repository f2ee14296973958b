import knexFactory from 'knex';
import { createPool as createMysqlPool } from 'mysql2';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { MYSQL_URL, requireMariaDb } from './mariadb';
import { PG_URL, requirePostgres } from './postgres';

/**
 * The servers of test/integration/sql-ddl-replicas.spec.ts: the machine's PostgreSQL and MariaDB, each
 * with its admin queries on a schema (database) of the test's own, the replicas' client shapes (every
 * shape the SQL code takes), a login without the CREATE privilege, and whether the library's DDL lock
 * is held.
 */

/** The prefix of the schemas, databases and logins the test creates (and drops). */
export const RUN = `dw_ddl_${process.pid}`;
/** The token the replicas register their client under. */
export const TOKEN = 'APP_DATABASE';

export type Dialect = 'postgres' | 'mysql';

/** A replica's clients: what the sink and the outbox are given (a token, or a connection string), the dead-letter store's client, and their close. */
export interface ReplicaClients {
  shape: string;
  provided: object;
  /** The sink's and the outbox's `client`: the token of `provided`, or a connection string (a pool of their own). */
  client: string;
  close(): Promise<void>;
}

export interface Server {
  name: string;
  dialect: Dialect;
  require(): Promise<void>;
  /** Creates the empty schema (database) `space`; drops it. */
  create(space: string): Promise<void>;
  drop(space: string): Promise<void>;
  /** The names of the tables in `space`. */
  tables(space: string): Promise<string[]>;
  /** One raw connection: a statement, its close. */
  connect(): Promise<{ query(text: string): Promise<unknown>; end(): Promise<unknown> }>;
  /** The replicas' client shapes, in turn. */
  shapes: Array<() => Promise<ReplicaClients>>;
  /** A login that may read `space` but not create tables in it: its pool (for the app), and its removal. */
  reader(space: string): Promise<{ pool: object; close(): Promise<void> }>;
  /** Whether a session holds the library's DDL lock now. */
  ddlLockHeld(): Promise<boolean>;
}

function pgPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  pool.on('error', () => undefined); // a connection the server cuts while idle is not an uncaught error
  return pool;
}

const pgAdmin = pgPool();

export const postgres: Server = {
  name: 'PostgreSQL',
  dialect: 'postgres',
  require: requirePostgres,
  create: async (space) => void (await pgAdmin.query(`CREATE SCHEMA ${space}`)),
  drop: async (space) => void (await pgAdmin.query(`DROP SCHEMA IF EXISTS ${space} CASCADE`)),
  tables: async (space) => (await pgAdmin.query('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1', [space])).rows.map((r) => String(r.name)),
  connect: async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    client.on('error', () => undefined);
    await client.connect();
    return { query: (text) => client.query(text), end: () => client.end() };
  },
  shapes: [
    async () => {
      const pool = pgPool();
      return { shape: 'a pg Pool', provided: pool, client: TOKEN, close: () => pool.end() };
    },
    async () => {
      const knex = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 4 } });
      return { shape: 'Knex (pg)', provided: knex as unknown as object, client: TOKEN, close: () => knex.destroy() };
    },
    async () => {
      const source = await new DataSource({ type: 'postgres', url: PG_URL, poolSize: 4 }).initialize();
      return { shape: 'a TypeORM DataSource (postgres)', provided: source, client: TOKEN, close: () => source.destroy() };
    },
    async () => {
      const pool = pgPool(); // the dead-letter store's; the sink and the outbox open their own
      return { shape: 'connection strings', provided: pool, client: PG_URL, close: () => pool.end() };
    },
  ],
  reader: async (space) => {
    const role = `${RUN}_reader`;
    await pgAdmin.query(`DROP ROLE IF EXISTS ${role}`);
    await pgAdmin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'reader'`);
    await pgAdmin.query(`GRANT USAGE ON SCHEMA ${space} TO ${role}`);
    const url = new URL(PG_URL);
    url.username = role;
    url.password = 'reader';
    const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
    pool.on('error', () => undefined);
    return {
      pool,
      close: async () => {
        await pool.end();
        await pgAdmin.query(`DROP OWNED BY ${role}`);
        await pgAdmin.query(`DROP ROLE ${role}`);
      },
    };
  },
  // the library's key (sql-ddl.ts), as pg_locks shows a bigint advisory lock: its high and low 32 bits
  ddlLockHeld: async () =>
    (await pgAdmin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = 348614961289182247")).rows[0].n > 0,
};

const mysqlAdmin = createMysqlPool({ uri: MYSQL_URL, connectionLimit: 2 }).promise();

export const mariadb: Server = {
  name: 'MariaDB',
  dialect: 'mysql',
  require: requireMariaDb,
  create: async (space) => void (await mysqlAdmin.query(`CREATE DATABASE ${space}`)),
  drop: async (space) => void (await mysqlAdmin.query(`DROP DATABASE IF EXISTS ${space}`)),
  tables: async (space) => ((await mysqlAdmin.query('SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [space]))[0] as Array<{ name: string }>).map((r) => r.name),
  connect: async () => {
    const connection = await createConnection({ uri: MYSQL_URL });
    return { query: (text) => connection.query(text), end: () => connection.end() };
  },
  shapes: [
    async () => {
      const pool = createMysqlPool({ uri: MYSQL_URL, connectionLimit: 4 });
      return { shape: 'a mysql2 pool', provided: pool, client: TOKEN, close: () => new Promise<void>((resolve) => pool.end(() => resolve())) };
    },
    async () => {
      const knex = knexFactory({ client: 'mysql2', connection: MYSQL_URL, pool: { min: 0, max: 4 } });
      return { shape: 'Knex (mysql2)', provided: knex as unknown as object, client: TOKEN, close: () => knex.destroy() };
    },
    async () => {
      const source = await new DataSource({ type: 'mariadb', url: MYSQL_URL, poolSize: 4 }).initialize();
      return { shape: 'a TypeORM DataSource (mariadb)', provided: source, client: TOKEN, close: () => source.destroy() };
    },
    async () => {
      const pool = createMysqlPool({ uri: MYSQL_URL, connectionLimit: 4 }).promise(); // a mysql2/promise pool for the store
      return { shape: 'connection strings', provided: pool, client: MYSQL_URL, close: () => pool.end() };
    },
  ],
  reader: async (space) => {
    const user = `${RUN}_reader`;
    await mysqlAdmin.query(`DROP USER IF EXISTS '${user}'@'%'`);
    await mysqlAdmin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY 'reader'`);
    await mysqlAdmin.query(`GRANT SELECT ON ${space}.* TO '${user}'@'%'`);
    const url = new URL(MYSQL_URL);
    url.username = user;
    url.password = 'reader';
    url.pathname = `/${space}`;
    const pool = createMysqlPool({ uri: url.toString(), connectionLimit: 1 });
    return {
      pool,
      close: async () => {
        await new Promise<void>((resolve) => pool.end(() => resolve()));
        await mysqlAdmin.query(`DROP USER '${user}'@'%'`);
      },
    };
  },
  ddlLockHeld: async () => ((await mysqlAdmin.query("SELECT IS_USED_LOCK('nestjs-deferred-work ddl') AS holder"))[0] as Array<{ holder: unknown }>)[0].holder !== null,
};

/** Ends the admin pools. */
export async function endAdmins(): Promise<void> {
  await pgAdmin.end();
  await mysqlAdmin.end();
}
