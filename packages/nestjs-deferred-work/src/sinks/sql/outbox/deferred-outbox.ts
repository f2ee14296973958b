import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DEFERRED_INTAKE, type DeferredIntake, type ItemBuilder } from '../../../core/intake.interface';
import type { DeferredJobOptions, DeferredLogLevel, DeferredLogOptions, DeferredMetricOptions, SinkItem } from '../../../core/items/deferred-item.interface';
import { describeToken } from '../../kit/app-client';
import { checkOptionsObject, checkString, checkWholeNumber, optionError } from '../../kit/option-checks';
import { settlesBy } from '../../../core/settle';
import { SinkConfigError } from '../../kit/sink-config.error';
import { openOwnPool, type SqlDriver, sqlDriverOf } from '../sql-clients';
import { atBootstrap, closeAfterFailedBootstrap } from '../sql-connections';
import { runDdl } from '../sql-ddl';
import { describeTable, quoteTable, SqlTableError, tableParts } from '../sql-tables';
import { DEFERRED_OUTBOX_OPTIONS } from './deferred-outbox.module-definition';
import { OutboxRelay, type OutboxRelayStats } from './outbox-relay';
import { outboxInsert, outboxTableDdl } from './outbox-statements';
import { txRunner } from './outbox-tx';
import { DEFERRED_OUTBOX_DEFAULTS, type DeferredOutboxOptions } from './outbox.options';

/** What `DeferredOutbox.add()` hands its callback: the item calls of a scope, written to the outbox. */
export type OutboxWork = ItemBuilder;

const CONNECTION_STRING = /^(postgres|postgresql|mysql|mariadb):\/\//i;
const LABEL = 'DeferredOutboxModule';

/**
 * The transactional outbox: writes deferred items as rows of an outbox table **inside your own
 * transaction**, so that they exist only if your business write commits; the relay (on every
 * instance with `relay: true`) reads committed rows and delivers their items to the sinks of
 * `DeferredWorkModule`, at least once, each with its id. Not the after-response path: see
 * docs/sinks/sql.md for when to use which.
 */
@Injectable()
export class DeferredOutbox implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('DeferredOutbox');
  private readonly options: Required<Omit<DeferredOutboxOptions, 'client'>> & { client: unknown };
  private driver: SqlDriver | undefined;
  private table = '';
  private relay: OutboxRelay | undefined;
  private closeOwnPool: (() => Promise<void>) | undefined;

  constructor(
    @Inject(DEFERRED_OUTBOX_OPTIONS) options: DeferredOutboxOptions,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    @Optional() @Inject(DEFERRED_INTAKE) private readonly intake?: DeferredIntake,
  ) {
    if (!intake) throw new SinkConfigError(`${LABEL} needs DeferredWorkModule.forRoot() (global) in the app: the relay delivers through its sinks.`, 'client');
    this.options = checkOutboxOptions(options);
  }

  /**
   * Writes the items `build` defers as outbox rows through `tx`, your open transaction: a TypeORM
   * `EntityManager` or `QueryRunner`, a Knex transaction (`TransactionHost.tx` of
   * `@nestjs-cls/transactional` is either), a `pg` client or a `mysql2` connection. The rows commit or
   * roll back with your transaction. Resolves with the items' ids; rejects — and writes nothing — when
   * an item is invalid or `tx` is not in a transaction.
   */
  async add(tx: unknown, build: (work: OutboxWork) => void): Promise<string[]> {
    const driver = this.ready();
    const runner = txRunner(tx, driver.dialect);
    const items: SinkItem[] = [];
    build(this.intake!.builder((item) => items.push(item)));
    if (items.length === 0) return [];
    const rows = items.map((item) => {
      this.intake!.validate(item);
      return [item.id!, JSON.stringify(item)] as const;
    });
    const statement = outboxInsert(driver.dialect, runner.placeholders, this.table, rows);
    await runner.run(statement.text, statement.values);
    return rows.map(([id]) => id);
  }

  /** One job, written through `tx` (see {@link add}); resolves with its id. */
  async job(tx: unknown, queue: string, name: string, data: unknown, opts?: DeferredJobOptions): Promise<string> {
    return (await this.add(tx, (work) => work.job(queue, name, data, opts)))[0];
  }

  /** One log record, written through `tx` (see {@link add}); resolves with its id. */
  async log(tx: unknown, level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredLogOptions): Promise<string> {
    return (await this.add(tx, (work) => work.log(level, message, fields, opts)))[0];
  }

  /** One metric point, written through `tx` (see {@link add}); resolves with its id. */
  async metric(tx: unknown, name: string, value: number, tags?: Record<string, string>, opts?: DeferredMetricOptions): Promise<string> {
    return (await this.add(tx, (work) => work.metric(name, value, tags, opts)))[0];
  }

  /** The relay's counters on this instance. */
  stats(): OutboxRelayStats {
    return this.relay?.stats() ?? { relaying: false, claimed: 0, delivered: 0, deadLettered: 0, refused: 0, spooled: 0, released: 0, failedRounds: 0 };
  }

  /** Finds the database, checks (or creates) the outbox table, starts the relay. After every module's init: the sinks are attached. */
  async onApplicationBootstrap(): Promise<void> {
    const driver = await this.findDriver();
    const table = quoteTable(driver.dialect, this.options.table);
    try {
      await atBootstrap(driver, this.options.bootstrapTimeoutMs, async (connection) => {
        if (this.options.createTable) await runDdl(connection, driver.dialect, outboxTableDdl(driver.dialect, table), this.options.bootstrapTimeoutMs);
        await describeTable(connection, driver.dialect, this.options.table, ['id', 'seq', 'item', 'claimed_until', 'attempts'], 'id');
      });
    } catch (error) {
      // a pool the relay opened is not left open behind a failed bootstrap
      const close = this.closeOwnPool;
      this.closeOwnPool = undefined;
      await closeAfterFailedBootstrap(close);
      if (error instanceof SqlTableError) throw new SinkConfigError(`${LABEL}: ${error.message.replace('docs/sinks/sql.md', 'docs/sinks/sql.md#the-outbox-table')}.`, 'table');
      throw new SinkConfigError(`${LABEL}: cannot read table ${this.options.table} through ${driver.what}: ${(error as Error)?.message ?? String(error)}. Check that the database is up and the user may read it.`, 'client');
    }
    this.driver = driver;
    this.table = table;
    if (!this.options.relay) return;
    const { batchSize, pollIntervalMs, leaseMs } = this.options;
    this.relay = new OutboxRelay(driver, table, { batchSize, pollIntervalMs, leaseMs }, this.intake!, this.logger);
    this.relay.start();
  }

  /** Stops claiming rows; the round under way settles and deletes its rows (within `shutdownTimeoutMs`). */
  async onModuleDestroy(): Promise<void> {
    await this.relay?.stop(this.intake!.shutdownTimeoutMs);
  }

  /** Closes the pool it opened (from a connection string), waiting at most `shutdownTimeoutMs` for a connection the database stopped answering. */
  async onApplicationShutdown(): Promise<void> {
    const close = this.closeOwnPool;
    this.closeOwnPool = undefined;
    if (close && !(await settlesBy(close(), Date.now() + (this.intake?.shutdownTimeoutMs ?? 0)))) {
      this.logger.warn(`${LABEL}: its own pool did not close within shutdownTimeoutMs (a connection the database stopped answering); left to close on its own.`);
    }
  }

  private ready(): SqlDriver {
    if (this.driver) return this.driver;
    throw new Error(`DeferredOutbox is not ready: it finds its database and checks ${this.options.table} when the application bootstraps. Call it once app.init() or app.listen() has resolved.`);
  }

  private async findDriver(): Promise<SqlDriver> {
    const { client } = this.options;
    const fail = (problem: string) =>
      new SinkConfigError(
        `${LABEL}: ${problem}. Pass client: the injection token of the app's TypeORM DataSource (getDataSourceToken() of @nestjs/typeorm), Knex instance, pg Pool or mysql2 pool; the client itself; or a connection string.`,
        'client',
      );
    if (typeof client === 'string' && CONNECTION_STRING.test(client)) {
      const own = await openOwnPool(client, 1, LABEL, (message) => this.logger.warn(message)).catch((error: Error) => {
        throw fail(`cannot open a pool for the connection string: ${error.message}`);
      });
      this.closeOwnPool = own.close;
      return own.driver;
    }
    const driverOf = (value: unknown) => {
      try {
        return sqlDriverOf(value);
      } catch (error) {
        throw fail(`the client is ${(error as Error).message}`);
      }
    };
    const direct = driverOf(client);
    if (direct) return direct;
    let found: unknown;
    try {
      found = this.moduleRef.get(client as string, { strict: false });
    } catch {
      throw fail(`nothing is registered as ${describeToken(client)}`);
    }
    const driver = driverOf(found);
    if (!driver) throw fail(`the provider ${describeToken(client)} is not a SQL client`);
    return driver;
  }
}

function checkOutboxOptions(options: DeferredOutboxOptions) {
  const o = checkOptionsObject(LABEL, options, '{ client: getDataSourceToken() } (or a Knex, pg or mysql2 pool, its token, or a connection string)', true);
  if (o.client === undefined || o.client === null) throw optionError(LABEL, 'client', 'is required', "Pass the app's database client or its injection token, e.g. client: getDataSourceToken().");
  const table = checkString(LABEL, 'table', o.table, { fallback: DEFERRED_OUTBOX_DEFAULTS.table });
  try {
    tableParts(table);
  } catch {
    throw optionError(LABEL, 'table', 'is not a table name', 'Use letters, digits, _ and $, as "name" or "schema.name".', o.table);
  }
  const flag = (name: 'createTable' | 'relay') => {
    const value = o[name] ?? DEFERRED_OUTBOX_DEFAULTS[name];
    if (typeof value !== 'boolean') throw optionError(LABEL, name, 'must be true or false', `Leave it out for ${DEFERRED_OUTBOX_DEFAULTS[name]}.`, o[name]);
    return value;
  };
  return {
    client: o.client,
    table,
    createTable: flag('createTable'),
    relay: flag('relay'),
    batchSize: checkWholeNumber(LABEL, 'batchSize', o.batchSize, { min: 1, max: 10_000, fallback: DEFERRED_OUTBOX_DEFAULTS.batchSize }),
    pollIntervalMs: checkWholeNumber(LABEL, 'pollIntervalMs', o.pollIntervalMs, { min: 1, max: 3_600_000, fallback: DEFERRED_OUTBOX_DEFAULTS.pollIntervalMs }),
    leaseMs: checkWholeNumber(LABEL, 'leaseMs', o.leaseMs, { min: 2000, max: 86_400_000, fallback: DEFERRED_OUTBOX_DEFAULTS.leaseMs }),
    bootstrapTimeoutMs: checkWholeNumber(LABEL, 'bootstrapTimeoutMs', o.bootstrapTimeoutMs, { min: 1, max: 600_000, fallback: DEFERRED_OUTBOX_DEFAULTS.bootstrapTimeoutMs, unit: 'ms' }),
  };
}
