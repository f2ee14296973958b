/** Options of `DeferredOutboxModule.forRoot()`. */
export interface DeferredOutboxOptions {
  /**
   * The database of the outbox table, which the relay reads: the app's TypeORM `DataSource`, Knex
   * instance, `pg` `Pool` or `mysql2` pool, or the injection token it is registered under (e.g.
   * `getDataSourceToken()`), or a connection string (then the relay opens a pool of one connection
   * of its own). The transactions passed to `DeferredOutbox` must be on this same database. Required.
   */
  client: unknown;
  /** The outbox table (`name` or `schema.name`). Default `'deferred_outbox'`. */
  table?: string;
  /** Create the outbox table at bootstrap when it does not exist (its DDL is in docs/sinks/sql.md). Default `false`. */
  createTable?: boolean;
  /**
   * Whether this instance relays: reads committed rows and hands their items to the sinks. Turn it off
   * on instances that only write (several instances may relay at once). Default `true`.
   */
  relay?: boolean;
  /** Rows claimed per round of the relay. Default `100`. */
  batchSize?: number;
  /** How long an idle relay waits before it looks for new rows again (ms). Default `200`. */
  pollIntervalMs?: number;
  /**
   * How long a claim on rows lasts (ms): a row claimed by an instance that stops (a crash, a kill -9)
   * before its items settled is claimed again by any relay after this. Longer than a sink's slowest
   * delivery, retries included. Default `60000`.
   */
  leaseMs?: number;
  /**
   * How long the bootstrap may wait for the database (a connection, then reading or creating the
   * outbox table), in ms: a database that takes connections and never answers fails the bootstrap,
   * saying so, instead of holding it forever. Default `30000`.
   */
  bootstrapTimeoutMs?: number;
}

/** The defaults of {@link DeferredOutboxOptions}. */
export const DEFERRED_OUTBOX_DEFAULTS = Object.freeze({
  table: 'deferred_outbox',
  createTable: false,
  relay: true,
  batchSize: 100,
  pollIntervalMs: 200,
  leaseMs: 60_000,
  bootstrapTimeoutMs: 30_000,
});
