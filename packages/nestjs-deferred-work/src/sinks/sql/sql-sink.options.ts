import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';

/** The SQL dialects the sink writes: PostgreSQL, and MySQL / MariaDB. */
export type SqlDialect = 'postgres' | 'mysql';

/**
 * Options of {@link SqlSink}, all optional. With none, the sink writes every job, log record and
 * metric point as one row of the default table `deferred_work` (see `docs/sinks/sql.md` for its DDL)
 * through the one SQL client the app registers.
 */
export interface SqlSinkOptions<C extends string = string> {
  /** Unique sink name, used by routing. Default `'sql'`. */
  name?: string;
  /**
   * The database to write to, one of:
   * - an injection token the app registers a client under (a TypeORM `DataSource` — `getDataSourceToken()`
   *   of `@nestjs/typeorm` —, a Knex instance, a `pg` `Pool`, a `mysql2` pool), resolved at bootstrap;
   * - such a client itself;
   * - a connection string (`postgres://…`, `mysql://…`): the only case in which the sink opens a pool of
   *   its own (`maxConnections` connections, closed at shutdown), with the `pg` or `mysql2` package.
   *
   * The sink never closes the app's client; it keeps it open until its rows are written at shutdown.
   * Default: the one SQL client among the app's providers (a bootstrap error when there are none or several).
   */
  client?: unknown;
  /** Which kinds of item the sink takes. Default `['job', 'log', 'metric']`. */
  kinds?: readonly SinkKind[];
  /**
   * The table rows go to (`name` or `schema.name`), or a function choosing it per item (a table per
   * kind, per queue). With a function, each table is checked the first time an item goes to it.
   * Default `'deferred_work'`.
   */
  table?: string | ((item: SinkItem) => string);
  /**
   * The columns `row` fills, checked at bootstrap against the table's real columns. Required with
   * `row`; must include `idColumn`. Default: the default table's columns.
   */
  columns?: readonly C[];
  /**
   * Maps an item to a row of your table: a value per column of `columns` (missing ones are `NULL`).
   * Objects and arrays are written as JSON. Must be pure: it runs when the item is deferred (to refuse
   * a bad item there) and again when it is written. Default: the default table's row (see the docs).
   */
  row?: (item: SinkItem) => Record<C, unknown>;
  /**
   * The column that holds the item's id (`item.id`), with a unique index: a row written again (a retry
   * after a lost reply, a spool replay) is skipped and counted as a duplicate. Default `'id'`.
   */
  idColumn?: C;
  /**
   * Creates the default table at bootstrap when it does not exist (`CREATE TABLE IF NOT EXISTS`). Only
   * with the default row; create your own tables with your migrations. Default `false`.
   */
  createTable?: boolean;
  /**
   * Most connections of the app's pool the sink holds at once (one per table written in parallel).
   * The sink takes them only after the response, never on the request path. Default `1`.
   */
  maxConnections?: number;
  /**
   * How long the bootstrap may wait for the database (a connection of the pool, then reading the
   * server's packet size on MySQL, creating the table with `createTable`, reading the table), in ms:
   * a database that takes connections and never answers fails the bootstrap, saying so, instead of
   * holding it forever. Default `30000`.
   */
  bootstrapTimeoutMs?: number;
  /**
   * PostgreSQL: sends each insert as a named prepared statement (planned once per connection). Turn it
   * off behind a pooler in transaction mode (PgBouncer before 1.21), which cannot keep one. Default `true`.
   */
  prepare?: boolean;
}

/** The name of a SQL sink unless `name` says otherwise. */
export const SQL_SINK_NAME = 'sql';

/** The option defaults of {@link SqlSink}. */
export const SQL_SINK_DEFAULTS = Object.freeze({
  name: SQL_SINK_NAME,
  kinds: Object.freeze(['job', 'log', 'metric'] as const),
  table: 'deferred_work',
  idColumn: 'id',
  createTable: false,
  maxConnections: 1,
  bootstrapTimeoutMs: 30_000,
  prepare: true,
});

/**
 * Dispatcher settings of a SQL sink:
 * - `maxBatchSize` 500: one statement of 500 rows takes a few milliseconds and one round trip; larger
 *   batches hold the connection longer without writing much faster.
 * - `flushIntervalMs` 10: a little longer than the default so that rows of concurrent requests share a
 *   statement (and its commit).
 * - `writeTimeoutMs` 10000: a statement waits for a pool connection first, behind the app's own queries.
 *
 * What it holds while the database is slow or down is the dispatcher's: a byte budget
 * (`maxQueueBytes`, 32 MiB), which rides out a commit stall at 20,000 rows a second and a restart or
 * fail-over at a few hundred; retries for `maxRetryDurationMs` (5 minutes).
 */
export const SQL_PROCESSOR_DEFAULTS: Partial<SinkProcessorOptions> = Object.freeze({
  maxBatchSize: 500,
  flushIntervalMs: 10,
  writeTimeoutMs: 10_000,
});
