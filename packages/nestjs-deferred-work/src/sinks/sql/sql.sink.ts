import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { chunk } from '../kit/chunks';
import { itemId } from '../kit/item-id';
import { ItemMemo } from '../kit/item-memo';
import { describeValue } from '../kit/option-checks';
import { Partitions } from '../kit/partitions';
import { runLimited } from '../kit/run-limited';
import { SinkConfigError } from '../kit/sink-config.error';
import { WriteProgress } from '../kit/write-progress';
import type { SqlConnection, SqlDriver } from './sql-clients';
import { atBootstrap, closeAfterFailedBootstrap, withConnection } from './sql-connections';
import { runDdl } from './sql-ddl';
import { findSqlDriver } from './sql-driver-lookup';
import { columnBit, type RowEntry, type RowValues, SqlRowWrites } from './sql-row-writes';
import { columnValue, defaultTableDdl, rowBytes } from './sql-rows';
import { checkSqlSinkOptions } from './sql-sink.checks';
import { SQL_PROCESSOR_DEFAULTS, type SqlSinkOptions } from './sql-sink.options';
import { describeTable, quoteTable, SqlTableError, tableParts, type TableShape } from './sql-tables';

/** MySQL's limit on placeholders in one statement. */
const MYSQL_MAX_PLACEHOLDERS = 65_535;

/**
 * Writes deferred items as rows of the app's own database — PostgreSQL, or MySQL / MariaDB — through
 * the client the app already has (a TypeORM `DataSource`, Knex, a `pg` or `mysql2` pool), found by
 * injection token at bootstrap: one statement per batch per table, each row keyed by the item's id so
 * that a row written again is skipped (and counted as a duplicate), a bad row isolated and
 * dead-lettered alone with the database's message and code, at most `maxConnections` of the app's
 * pool held at a time, and the client kept open until the rows are written at shutdown.
 * See `docs/sinks/sql.md`.
 */
export class SqlSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[];
  readonly defaults: Partial<SinkProcessorOptions> = SQL_PROCESSOR_DEFAULTS;

  private readonly label: string;
  private readonly client: unknown;
  private readonly table: string | ((item: SinkItem) => string);
  private readonly columns: readonly string[];
  private readonly row: (item: SinkItem) => Record<string, unknown>;
  private readonly idColumn: string;
  private readonly createTable: boolean;
  private readonly maxConnections: number;
  private readonly bootstrapTimeoutMs: number;
  /** Writes a table's rows on a connection (the statements, isolation, duplicates). */
  private readonly rowWrites: SqlRowWrites;

  private driver: SqlDriver | undefined;
  private closeOwnPool: (() => Promise<void>) | undefined;
  private readonly shapes = new Map<string, Promise<TableShape>>();
  /** MySQL: the most bytes of one statement (`max_allowed_packet`, less a margin). */
  private maxStatementBytes = Number.POSITIVE_INFINITY;
  private closed = false;
  /** Each item's row values, from its validation to its write (an item copied — spooled, offloaded — is mapped again); on the item, see ItemMemo. */
  private readonly mapped = new ItemMemo<RowValues>('SqlSink row values');

  constructor(options?: SqlSinkOptions) {
    const settings = checkSqlSinkOptions(options);
    this.name = settings.name;
    this.label = settings.label;
    this.kinds = settings.kinds;
    this.client = settings.client;
    this.table = settings.table;
    this.columns = settings.columns;
    this.row = settings.row;
    this.idColumn = settings.idColumn;
    this.createTable = settings.createTable;
    this.maxConnections = settings.maxConnections;
    this.bootstrapTimeoutMs = settings.bootstrapTimeoutMs;
    this.rowWrites = new SqlRowWrites(this.label, settings.prepare);
  }

  /** Finds the database client, holds it open through the drain, and checks (or creates) the table. */
  async attach(context: SinkAttachContext): Promise<void> {
    const found = await findSqlDriver(context, this.client, this.label, this.maxConnections);
    this.driver = found.driver;
    this.closeOwnPool = found.closeOwnPool;
    if (!this.closeOwnPool) context.holdOpen(this.driver.closable);
    await atBootstrap(this.driver, this.bootstrapTimeoutMs, async (connection) => {
      if (this.driver!.dialect === 'mysql') {
        const [row] = await connection.query({ text: 'SELECT @@max_allowed_packet AS packet', values: [] });
        // the margin: the statement's own text, and the estimate of each value's bytes
        this.maxStatementBytes = Math.max(64 * 1024, Math.floor(Number(row?.packet ?? 4 * 1024 * 1024) * 0.8));
      }
      if (typeof this.table !== 'string') return;
      if (this.createTable) await runDdl(connection, this.driver!.dialect, [defaultTableDdl(this.driver!.dialect, quoteTable(this.driver!.dialect, this.table))], this.bootstrapTimeoutMs);
      try {
        this.shapes.set(this.table, Promise.resolve(await describeTable(connection, this.driver!.dialect, this.table, this.columns, this.idColumn)));
      } catch (error) {
        if (error instanceof SqlTableError) throw new SinkConfigError(`${this.label}: ${error.message}.`, 'table');
        throw error;
      }
    }).catch(async (error: unknown) => {
      // a pool the sink opened (from a connection string) is not left open behind a failed bootstrap
      const close = this.closeOwnPool;
      this.closeOwnPool = undefined;
      await closeAfterFailedBootstrap(close);
      if (error instanceof SinkConfigError) throw error;
      throw new SinkConfigError(`${this.label}: cannot read table ${String(typeof this.table === 'string' ? this.table : '(per item)')} through ${this.driver!.what}: ${(error as Error)?.message ?? String(error)}. Check that the database is up and the user may read it.`, 'client');
    });
  }

  /** Refuses, when it is deferred, an item whose row cannot be written (a table name that is not one, a value that is not JSON, a row over MySQL's packet size). */
  validate(item: SinkItem): void {
    if (typeof this.table === 'function') tableParts(this.table(item));
    const values = this.values(item);
    if (this.driver?.dialect === 'mysql' && rowBytes(values) > this.maxStatementBytes) {
      throw new Error(`${this.label}: the row is larger than the server's max_allowed_packet allows (${this.maxStatementBytes} bytes with the margin)`);
    }
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    const driver = this.driver;
    if (this.closed || !driver) throw new SinkWriteError(`${this.label} is ${this.closed ? 'shut down' : 'not attached: add it to DeferredWorkModule'}`, { retryable: false });
    const parts = new Partitions<string, string, RowEntry>();
    for (let index = 0; index < batch.length; index++) {
      try {
        const item = batch[index];
        const table = typeof this.table === 'string' ? this.table : this.table(item);
        parts.add(table, index, { index, values: this.values(item) }, () => table);
      } catch (error) {
        parts.refuse(index, error, false);
      }
    }
    const progress = new WriteProgress(batch.length);
    for (const failure of parts.failed) progress.failEntry(failure);
    const duplicates: number[] = [];
    const tasks: Array<{ shape: TableShape; entries: RowEntry[] }> = [];
    for (const part of parts.list()) {
      let shape: TableShape;
      try {
        shape = await this.shapeOf(part.destination, signal);
      } catch (error) {
        progress.fail(part.indexes, error, !(error instanceof SqlTableError));
        continue;
      }
      if (driver.dialect === 'postgres') tasks.push({ shape, entries: part.values });
      else {
        const { chunks, tooLarge } = chunk(part.values, { maxCount: Math.floor(MYSQL_MAX_PLACEHOLDERS / this.columns.length), maxBytes: this.maxStatementBytes }, (e) => rowBytes(e.values));
        progress.fail(tooLarge.map((p) => part.values[p].index), new Error(`${this.label}: the row is larger than max_allowed_packet allows`), false);
        for (const c of chunks) tasks.push({ shape, entries: c.values });
      }
    }
    const outcomes = await runLimited(tasks, this.maxConnections, (task) => this.rowWrites.writeRows(driver, task.shape, task.entries, signal, progress, duplicates), signal);
    outcomes.forEach((outcome, t) => {
      if (outcome.status !== 'fulfilled') progress.fail(tasks[t].entries.map((e) => e.index), outcome.reason, true);
    });
    const result = progress.result(true);
    if (duplicates.length === 0) return result;
    return { ...result, duplicates: duplicates.sort((a, b) => a - b) };
  }

  /** Closes the sink's own pool (from a connection string); the app's client is the app's to close. */
  async shutdown(): Promise<void> {
    this.closed = true;
    await this.closeOwnPool?.();
  }

  /** The item's row values, in the order of the sink's columns (mapped once: when it is validated, kept for its write). */
  private values(item: SinkItem): RowValues {
    const known = this.mapped.get(item);
    if (known) return known;
    itemId(item); // an item written outside the dispatcher (a test) gets its id here, for row(item)
    const row = this.row(item);
    if (typeof row !== 'object' || row === null) throw new Error(`${this.label}: row(item) must return an object of column values, got ${describeValue(row)}`);
    let givenStrings = 0;
    const values: RowValues = this.columns.map((column, c) => {
      const value = row[column];
      if (typeof value === 'string') givenStrings |= columnBit(c);
      try {
        return columnValue(value);
      } catch (error) {
        throw new Error(`${this.label}: row(item) gave column "${column}" ${errorMessage(error)}`);
      }
    });
    if (givenStrings !== 0) values.givenStrings = givenStrings;
    this.mapped.set(item, values);
    return values;
  }

  /** The table's shape, read and checked the first time it is written (a table chosen per item). */
  private shapeOf(table: string, signal: AbortSignal): Promise<TableShape> {
    let shape = this.shapes.get(table);
    if (!shape) {
      shape = (async () => {
        tableParts(table);
        return this.withConnection((connection) => describeTable(connection, this.driver!.dialect, table, this.columns, this.idColumn), signal);
      })();
      this.shapes.set(table, shape);
      shape.catch(() => this.shapes.delete(table)); // read again next time (a migration may add it)
    }
    return shape;
  }

  /** Runs `fn` on a connection of the pool (see `withConnection`). */
  private withConnection<T>(fn: (connection: SqlConnection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withConnection(this.driver!, fn, signal);
  }
}
