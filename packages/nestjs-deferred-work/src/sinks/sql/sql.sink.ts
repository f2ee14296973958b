import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { chunk } from '../kit/chunks';
import { isolate } from '../kit/isolate';
import { itemId } from '../kit/item-id';
import { ItemMemo } from '../kit/item-memo';
import { describeValue } from '../kit/option-checks';
import { Partitions } from '../kit/partitions';
import { runLimited } from '../kit/run-limited';
import { SinkConfigError } from '../kit/sink-config.error';
import { WriteProgress } from '../kit/write-progress';
import type { SqlConnection, SqlDriver } from './sql-clients';
import { atBootstrap, closeAfterFailedBootstrap, run, withConnection } from './sql-connections';
import { runDdl } from './sql-ddl';
import { findSqlDriver } from './sql-driver-lookup';
import { sqlErrorCode, sqlErrorKind } from './sql-errors';
import { columnValue, defaultTableDdl, rowBytes } from './sql-rows';
import { checkSqlSinkOptions } from './sql-sink.checks';
import { SQL_PROCESSOR_DEFAULTS, type SqlSinkOptions } from './sql-sink.options';
import { describeTable, jsonColumnsOf, mysqlExisting, mysqlInsert, pgInsert, quoteTable, SqlTableError, tableParts, type TableShape } from './sql-tables';

/** MySQL's limit on placeholders in one statement. */
const MYSQL_MAX_PLACEHOLDERS = 65_535;

/** MySQL's and MariaDB's `ER_DUP_ENTRY`, as `sqlErrorCode` gives it. */
const DUPLICATE_ENTRY = '1062';

/** An item ready to write: its index in the batch and its row's values, in the order of the sink's columns. */
interface Entry {
  index: number;
  values: RowValues;
}

/**
 * A row's values, with a mask of the columns `row(item)` gave a string (not an object the sink wrote as
 * JSON): bit `c` for column `c`, bit 30 for any column from 30 on.
 */
type RowValues = unknown[] & { givenStrings?: number };

/** The bit of column `c` in `RowValues.givenStrings`. */
const columnBit = (c: number): number => 1 << Math.min(c, 30);

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
  private readonly prepare: boolean;

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
    this.prepare = settings.prepare;
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
    const parts = new Partitions<string, string, Entry>();
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
    const tasks: Array<{ shape: TableShape; entries: Entry[] }> = [];
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
    const outcomes = await runLimited(tasks, this.maxConnections, (task) => this.writeRows(driver, task.shape, task.entries, signal, progress, duplicates), signal);
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

  /**
   * PostgreSQL: the entries whose `json`/`jsonb` values are each one JSON value; the others fail for
   * good. A row's values go to the server inside one JSON document (see `pgInsert`), where an object
   * is written as its JSON text as it is — so a string given for such a column must be JSON text of one
   * value, or it could add keys or rows to the document.
   */
  private withJsonChecked(shape: TableShape, entries: Entry[], progress: WriteProgress): Entry[] {
    const jsonColumns = jsonColumnsOf(shape);
    if (jsonColumns.length === 0) return entries;
    return entries.filter((entry) => {
      const given = entry.values.givenStrings;
      if (given === undefined) return true; // no strings given: the sink wrote the objects as JSON itself
      for (const c of jsonColumns) {
        const value = entry.values[c];
        if ((given & columnBit(c)) === 0 || typeof value !== 'string' || isOneJsonValue(value)) continue;
        const message = `${this.label}: column "${shape.columns[c]}" is ${shape.types[c]}, and row(item) gave it a string that is not JSON text (${describeValue(value.length > 60 ? `${value.slice(0, 60)}…` : value)}); give an object, or JSON.stringify(value)`;
        progress.fail([entry.index], new SinkWriteError(message, { retryable: false }), false);
        return false;
      }
      return true;
    });
  }

  /**
   * Writes one table's rows on one pool connection: one statement, split in halves to isolate a row the
   * database refuses. Confirms each row written, notes each skipped as a duplicate, fails the rest.
   */
  private async writeRows(driver: SqlDriver, shape: TableShape, entries: Entry[], signal: AbortSignal, progress: WriteProgress, duplicates: number[]): Promise<void> {
    if (driver.dialect === 'postgres') entries = this.withJsonChecked(shape, entries, progress);
    if (entries.length === 0) return;
    await this.withConnection(async (connection) => {
      const send = async (rows: Entry[]) => {
        let skipped: (id: unknown) => boolean;
        if (driver.dialect === 'postgres') {
          const inserted = await run(connection, pgInsert(shape, rows.map((r) => r.values), this.prepare), progress, signal);
          const written = new Set(inserted.map((r) => String(r.id)));
          skipped = (id) => !written.has(String(id));
        } else {
          const there = await this.mysqlInsertNew(connection, shape, rows, progress, signal);
          skipped = (id) => there.has(String(id));
        }
        progress.confirm(rows.map((r) => r.index));
        for (const r of rows) if (skipped(r.values[shape.idIndex])) duplicates.push(r.index);
      };
      const errors = await isolate(entries, send, { signal, splits: (error) => sqlErrorKind(error) === 'row', split: 'halves' });
      let broken: unknown;
      errors.forEach((error, i) => {
        if (error === undefined) return;
        const code = sqlErrorCode(error);
        const timedOut = signal.aborted && error === signal.reason;
        const row = !timedOut && sqlErrorKind(error) === 'row';
        if (!row) broken ??= error;
        progress.failEntry({ index: entries[i].index, error, retryable: !row, ...(code && !timedOut ? { code } : {}) });
      });
      // a connection that failed a statement for another reason than a row (reset, shut down) is not given back as it is
      if (broken !== undefined) connection.destroy(broken);
    }, signal);
  }

  /**
   * MySQL / MariaDB: inserts the rows whose ids are not in the table yet, with a plain `INSERT` (not
   * `ON DUPLICATE KEY UPDATE`, which would take a clash on any other unique key for a row already
   * there, and count it delivered). Returns the ids found there (duplicates). A row whose id was written
   * meanwhile (a write given up on at its timeout, committed after the check) fails the insert with
   * `ER_DUP_ENTRY`: found by a second check, it is a duplicate too, and the rest are inserted again.
   * A clash on another unique key finds nothing new: the error is the row's (isolated by the caller).
   * Ids are compared as the exact strings the table gives back.
   */
  private async mysqlInsertNew(connection: SqlConnection, shape: TableShape, rows: Entry[], progress: WriteProgress, signal: AbortSignal): Promise<Set<string>> {
    const idOf = (r: Entry) => r.values[shape.idIndex];
    const there = new Set<string>();
    let fresh = rows;
    let clash: unknown;
    for (;;) {
      for (const r of await run(connection, mysqlExisting(shape, fresh.map(idOf)), progress, signal)) there.add(String(r.id));
      const left = fresh.filter((r) => !there.has(String(idOf(r))));
      // After a clash, nothing new found as it was written (or an id the column's collation takes for
      // another: 'A' for 'a' in a case-insensitive one): the clash is the rows', isolated by the caller.
      if (clash !== undefined && left.length === fresh.length) throw clash;
      if (left.length === 0) return there;
      try {
        await run(connection, mysqlInsert(shape, left.map((r) => r.values)), progress, signal);
        return there;
      } catch (error) {
        if (sqlErrorCode(error) !== DUPLICATE_ENTRY || signal.aborted) throw error;
        clash = error;
        fresh = left;
      }
    }
  }

  /** Runs `fn` on a connection of the pool (see `withConnection`). */
  private withConnection<T>(fn: (connection: SqlConnection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withConnection(this.driver!, fn, signal);
  }
}

/** Whether `text` is the JSON text of one value (what `JSON.parse` takes). */
function isOneJsonValue(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
