import type { SqlDialect } from './sql-sink.options';

/**
 * The SQL clients the sink writes through, typed by the part it uses (so that the subpath loads
 * without `pg`, `mysql2`, `typeorm` or `knex`), and one connection interface over them.
 */

/** One statement: its text (`$1` placeholders on PostgreSQL, `?` on MySQL), values and, on PostgreSQL, a prepared statement's name. */
export interface SqlStatement {
  text: string;
  values: unknown[];
  name?: string;
}

/** One connection taken from a pool for one write. */
export interface SqlConnection {
  /** Runs a statement: the rows of a query (`RETURNING` included), `[]` for other statements. */
  query(statement: SqlStatement): Promise<Array<Record<string, unknown>>>;
  /** Gives the connection back to its pool. */
  release(): void;
  /** Closes the connection (a statement cut short by the write's signal) and gives it back, so that the pool opens a fresh one. */
  destroy(reason: unknown): void;
}

/** A source of connections: the app's pool, found through whichever client the app registered. */
export interface SqlDriver {
  readonly dialect: SqlDialect;
  /** How messages name it, e.g. `a pg Pool`, `a TypeORM DataSource (postgres)`. */
  readonly what: string;
  /** The object the app closes (a pool's `end`, a DataSource's or Knex's `destroy`): held open through the drain. */
  readonly closable: object;
  /** Takes a connection from the pool (waiting behind the app's own queries when every one is busy). */
  acquire(): Promise<SqlConnection>;
}

type Callback<T> = (error: Error | null, result?: T) => void;

/** A `pg` `Pool` (node-postgres 8). */
interface PgPoolLike {
  connect(): Promise<PgClientLike & { release(destroy?: boolean | Error): void }>;
  end(): Promise<void>;
  totalCount: number;
  idleCount: number;
}

/** A `pg` `Client`, as a pool or Knex hands one out. */
interface PgClientLike {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** A `mysql2` (or `mysql`) callback connection, as a pool or Knex hands one out. */
interface MysqlConnectionLike {
  query(options: { sql: string; values: unknown[] }, callback: Callback<unknown>): unknown;
  destroy(): void;
}

/** A `mysql2` callback pool (`createPool`), or a pool cluster (TypeORM with replication). */
interface MysqlPoolLike {
  getConnection(callback: Callback<MysqlConnectionLike & { release(): void }>): void;
  end(...args: unknown[]): unknown;
  config: { connectionConfig?: unknown };
}

/** A Knex instance (a function with a `client`). */
interface KnexLike {
  (...args: unknown[]): unknown;
  client: { dialect?: string; config?: { client?: unknown }; acquireConnection(): Promise<unknown>; releaseConnection(connection: unknown): Promise<unknown> };
  raw: unknown;
  destroy(): Promise<void>;
}

/** A TypeORM `DataSource` (0.3 or 1.x), initialized. */
interface DataSourceLike {
  options: { type: string };
  isInitialized: boolean;
  createQueryRunner: unknown;
  driver: { master?: unknown; pool?: unknown; poolCluster?: { getConnection(group: string, callback: Callback<MysqlConnectionLike & { release(): void }>): void } };
  destroy(): Promise<void>;
}

const isObject = (value: unknown): value is Record<string, unknown> => (typeof value === 'object' || typeof value === 'function') && value !== null;

function isPgPool(value: unknown): value is PgPoolLike {
  return isObject(value) && typeof value.connect === 'function' && typeof value.end === 'function' && typeof value.totalCount === 'number' && typeof value.idleCount === 'number';
}

function isMysqlPool(value: unknown): value is MysqlPoolLike {
  return isObject(value) && typeof value.getConnection === 'function' && isObject(value.config) && 'connectionConfig' in value.config;
}

/** A `mysql2/promise` pool wraps the callback pool as `.pool`. */
function mysqlCallbackPool(value: unknown): MysqlPoolLike | undefined {
  if (isMysqlPool(value)) return value;
  if (isObject(value) && isMysqlPool(value.pool) && typeof value.getConnection === 'function') return value.pool;
  return undefined;
}

function isKnex(value: unknown): value is KnexLike {
  return typeof value === 'function' && isObject((value as unknown as KnexLike).client) && typeof (value as unknown as KnexLike).client.acquireConnection === 'function';
}

function isDataSource(value: unknown): value is DataSourceLike {
  return isObject(value) && typeof value.createQueryRunner === 'function' && isObject(value.options) && typeof value.options.type === 'string' && isObject(value.driver);
}

/** Runs `fn` with a node-style callback as a promise. */
function promised<T>(fn: (callback: Callback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((error, result) => (error ? reject(error) : resolve(result as T))));
}

/**
 * While the sink holds a connection, an `error` event on it (the link reset, the server shutting down)
 * must have a listener: a checked-out `pg` client has none of its pool's, and an unheard `error` event
 * would end the process. The statement in flight fails with the error anyway.
 */
function heard(connection: unknown, release: () => void, destroy: (reason: unknown) => void): { release(): void; destroy(reason: unknown): void } {
  const emitter = connection as { on?(event: string, fn: (error: unknown) => void): unknown; removeListener?(event: string, fn: (error: unknown) => void): unknown };
  const ignore = () => undefined;
  emitter.on?.('error', ignore);
  const unhear = () => void emitter.removeListener?.('error', ignore);
  return {
    release: () => {
      unhear();
      release();
    },
    destroy: (reason) => {
      destroy(reason);
      setImmediate(unhear); // errors of the close itself come after
    },
  };
}

function pgConnection(client: PgClientLike, release: () => void, destroy: (reason: unknown) => void): SqlConnection {
  return {
    query: async (statement) => (await client.query(statement)).rows ?? [],
    ...heard(client, release, destroy),
  };
}

function mysqlConnection(connection: MysqlConnectionLike, release: () => void, destroy: (reason: unknown) => void = () => connection.destroy()): SqlConnection {
  return {
    query: async (statement) => {
      const result = await promised<unknown>((callback) => connection.query({ sql: statement.text, values: statement.values }, callback));
      return Array.isArray(result) ? (result as Array<Record<string, unknown>>) : [];
    },
    // a destroyed pool connection leaves its pool
    ...heard(connection, release, destroy),
  };
}

function pgPoolDriver(pool: PgPoolLike, what: string, closable: object): SqlDriver {
  return {
    dialect: 'postgres',
    what,
    closable,
    acquire: async () => {
      const client = await pool.connect();
      return pgConnection(client, () => client.release(), (reason) => client.release(reason instanceof Error ? reason : new Error(String(reason))));
    },
  };
}

function mysqlPoolDriver(getConnection: (callback: Callback<MysqlConnectionLike & { release(): void }>) => void, what: string, closable: object): SqlDriver {
  return {
    dialect: 'mysql',
    what,
    closable,
    acquire: async () => {
      const connection = await promised(getConnection);
      return mysqlConnection(connection, () => connection.release());
    },
  };
}

function knexDriver(knex: KnexLike): SqlDriver {
  const name = String(knex.client.config?.client ?? knex.client.dialect ?? '');
  const dialect: SqlDialect | undefined = /^(pg|postgres|postgresql|pgnative|cockroachdb)$/.test(name) ? 'postgres' : /^(mysql|mysql2|mariadb)$/.test(name) ? 'mysql' : undefined;
  if (!dialect) throw new TypeError(`a Knex instance for "${name}", which the SQL sink does not write (it writes PostgreSQL and MySQL / MariaDB)`);
  const client = knex.client;
  return {
    dialect,
    what: `a Knex instance (${name})`,
    closable: knex,
    acquire: async () => {
      const raw = (await client.acquireConnection()) as PgClientLike & MysqlConnectionLike & { end?(): unknown; __knex__disposed?: unknown };
      const release = () => void client.releaseConnection(raw).catch(() => undefined);
      const destroy = (reason: unknown) => {
        raw.__knex__disposed = reason; // Knex's pool discards a connection so marked instead of handing it out again
        if (dialect === 'postgres') Promise.resolve(raw.end?.()).catch(() => undefined);
        else raw.destroy();
        release();
      };
      return dialect === 'postgres' ? pgConnection(raw, release, destroy) : mysqlConnection(raw, release, destroy);
    },
  };
}

function dataSourceDriver(source: DataSourceLike): SqlDriver {
  const type = source.options.type;
  const what = `a TypeORM DataSource (${type})`;
  if (!source.isInitialized) throw new TypeError(`${what} that is not initialized (await dataSource.initialize(), or let TypeOrmModule do it)`);
  const { master, pool, poolCluster } = source.driver;
  if ((type === 'postgres' || type === 'cockroachdb') && isPgPool(master)) return pgPoolDriver(master, what, source);
  if (type === 'mysql' || type === 'mariadb') {
    if (poolCluster) return mysqlPoolDriver((callback) => poolCluster.getConnection('MASTER', callback), what, source);
    if (isMysqlPool(pool)) return mysqlPoolDriver((callback) => pool.getConnection(callback), what, source);
  }
  throw new TypeError(`${what}, which the SQL sink does not write (it writes PostgreSQL and MySQL / MariaDB through pg and mysql2)`);
}

/**
 * The driver for `client`, or `undefined` when it is not a SQL client the sink knows. Throws a
 * `TypeError` for a known kind of client it cannot write through (another database, not initialized).
 */
export function sqlDriverOf(client: unknown): SqlDriver | undefined {
  if (isDataSource(client)) return dataSourceDriver(client);
  if (isKnex(client)) return knexDriver(client);
  if (isPgPool(client)) return pgPoolDriver(client, 'a pg Pool', client);
  const mysql = mysqlCallbackPool(client);
  if (mysql) return mysqlPoolDriver((callback) => mysql.getConnection(callback), 'a mysql2 pool', client as object);
  return undefined;
}

/** Whether `value` looks like a SQL client the sink writes through (to find the app's among its providers). */
export function isSqlClient(value: unknown): boolean {
  return isDataSource(value) || isKnex(value) || isPgPool(value) || mysqlCallbackPool(value) !== undefined;
}

/**
 * The sink's own pool, from a connection string (the only pool it opens): its driver and how to close
 * it. An idle connection's error (the database restarting) goes to `warn`: a pool's `error` event
 * with no listener would end the process.
 */
export async function openOwnPool(url: string, max: number, label: string, warn: (message: string) => void): Promise<{ driver: SqlDriver; close(): Promise<void> }> {
  const heard = (pool: { on?(event: 'error', listener: (error: Error) => void): unknown }) =>
    pool.on?.('error', (error: Error) => warn(`${label}: its own pool lost an idle connection (the database restarted, or the connection was cut): ${error.message}; the pool opens a new one when needed`));
  const protocol = url.slice(0, url.indexOf(':')).toLowerCase();
  if (protocol === 'postgres' || protocol === 'postgresql') {
    const pg = (await importPeer('pg')) as { Pool?: new (options: object) => PgPoolLike; default?: { Pool: new (options: object) => PgPoolLike } };
    const Pool = pg.Pool ?? pg.default!.Pool;
    const pool = new Pool({ connectionString: url, max });
    heard(pool as never);
    return { driver: pgPoolDriver(pool, 'its own pg Pool', pool), close: () => pool.end() };
  }
  const mysql2 = (await importPeer('mysql2')) as { createPool?: (options: object) => MysqlPoolLike; default?: { createPool: (options: object) => MysqlPoolLike } };
  const createPool = mysql2.createPool ?? mysql2.default!.createPool;
  const pool = createPool({ uri: url.replace(/^mariadb:/i, 'mysql:'), connectionLimit: max });
  heard(pool as never);
  return {
    driver: mysqlPoolDriver((callback) => pool.getConnection(callback), 'its own mysql2 pool', pool),
    close: () => promised<void>((callback) => void pool.end(callback)),
  };
}

async function importPeer(name: string): Promise<unknown> {
  try {
    return await import(name);
  } catch (error) {
    throw new TypeError(`the "${name}" package is not installed (${(error as Error).message.split('\n')[0]}). Install it: npm install ${name}`);
  }
}
