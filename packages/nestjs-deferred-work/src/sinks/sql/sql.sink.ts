import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { describeToken, resolveToken } from '../kit/app-client';
import { chunk } from '../kit/chunks';
import { isolate } from '../kit/isolate';
import { itemId } from '../kit/item-id';
import { checkOptionsObject, checkSinkName, checkString, checkWholeNumber, describeValue, optionError } from '../kit/option-checks';
import { Partitions } from '../kit/partitions';
import { runLimited } from '../kit/run-limited';
import { SinkConfigError } from '../kit/sink-config.error';
import { WriteProgress } from '../kit/write-progress';
import { isSqlClient, openOwnPool, type SqlConnection, type SqlDriver, sqlDriverOf } from './sql-clients';
import { sqlErrorCode, sqlErrorKind } from './sql-errors';
import { columnValue, DEFAULT_COLUMNS, defaultRow, defaultTableDdl, valueBytes } from './sql-rows';
import { SQL_PROCESSOR_DEFAULTS, SQL_SINK_DEFAULTS, type SqlSinkOptions } from './sql-sink.options';
import { describeTable, mysqlExisting, mysqlInsert, pgInsert, quoteTable, SqlTableError, tableParts, type TableShape } from './sql-tables';

const SINK_KINDS: readonly SinkKind[] = ['job', 'log', 'metric'];
const CONNECTION_STRING = /^(postgres|postgresql|mysql|mariadb):\/\//i;
/** MySQL's limit on placeholders in one statement. */
const MYSQL_MAX_PLACEHOLDERS = 65_535;

/** An item ready to write: its index in the batch and its row's values, in the order of the sink's columns. */
interface Entry {
  index: number;
  values: unknown[];
}

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
  private readonly prepare: boolean;

  private driver: SqlDriver | undefined;
  private closeOwnPool: (() => Promise<void>) | undefined;
  private readonly shapes = new Map<string, Promise<TableShape>>();
  /** MySQL: the most bytes of one statement (`max_allowed_packet`, less a margin). */
  private maxStatementBytes = Number.POSITIVE_INFINITY;
  private closed = false;
  /** Each item's row values, from its validation to its write (an item copied — spooled, offloaded — is mapped again). */
  private readonly mapped = new WeakMap<SinkItem, unknown[]>();

  constructor(options?: SqlSinkOptions) {
    const o = checkOptionsObject('SqlSink', options, "{ client: getDataSourceToken() } (or a Knex, pg or mysql2 pool, its token, or a connection string)", true);
    this.name = checkSinkName('SqlSink', o.name, SQL_SINK_DEFAULTS.name);
    this.label = `SqlSink "${this.name}"`;
    this.kinds = checkKinds(this.label, o.kinds);
    this.client = o.client;
    if (typeof o.table === 'function') this.table = o.table;
    else {
      this.table = checkString(this.label, 'table', o.table, { fallback: SQL_SINK_DEFAULTS.table });
      try {
        tableParts(this.table);
      } catch (error) {
        throw optionError(this.label, 'table', 'is not a table name', 'Use letters, digits, _ and $, as "name" or "schema.name", or a function of the item.', o.table);
      }
    }
    if (o.row !== undefined && typeof o.row !== 'function') throw optionError(this.label, 'row', 'must be a function of the item', 'Pass (item) => ({ column: value, … }), with columns listing them.', o.row);
    if (o.row && o.columns === undefined) throw optionError(this.label, 'columns', 'is required with "row"', 'List the columns your row fills, e.g. columns: [\'id\', \'event\', \'body\'], so the table can be checked at bootstrap.');
    this.row = o.row ?? defaultRow;
    this.columns = o.row ? checkColumns(this.label, o.columns) : DEFAULT_COLUMNS;
    if (!o.row && o.columns !== undefined) throw optionError(this.label, 'columns', 'is only taken with "row"', 'Leave it out for the default table, or pass row as well.');
    this.idColumn = checkString(this.label, 'idColumn', o.idColumn, { fallback: SQL_SINK_DEFAULTS.idColumn });
    if (!this.columns.includes(this.idColumn)) {
      throw optionError(this.label, 'columns', `must include the id column "${this.idColumn}"`, 'Map it to item.id in your row, so that a row written again is skipped, or set idColumn to the column that holds it.');
    }
    this.createTable = o.createTable ?? SQL_SINK_DEFAULTS.createTable;
    if (typeof this.createTable !== 'boolean') throw optionError(this.label, 'createTable', 'must be true or false', 'Leave it out for false.', o.createTable);
    if (this.createTable && o.row) throw optionError(this.label, 'createTable', 'only creates the default table', 'Create your own table with your migrations, or leave out row and columns.');
    this.maxConnections = checkWholeNumber(this.label, 'maxConnections', o.maxConnections, { min: 1, max: 64, fallback: SQL_SINK_DEFAULTS.maxConnections });
    this.prepare = o.prepare ?? SQL_SINK_DEFAULTS.prepare;
    if (typeof this.prepare !== 'boolean') throw optionError(this.label, 'prepare', 'must be true or false', 'Leave it out for true.', o.prepare);
  }

  /** Finds the database client, holds it open through the drain, and checks (or creates) the table. */
  async attach(context: SinkAttachContext): Promise<void> {
    this.driver = await this.findDriver(context);
    if (!this.closeOwnPool) context.holdOpen(this.driver.closable);
    await this.withConnection(async (connection) => {
      if (this.driver!.dialect === 'mysql') {
        const [row] = await connection.query({ text: 'SELECT @@max_allowed_packet AS packet', values: [] });
        // the margin: the statement's own text, and the estimate of each value's bytes
        this.maxStatementBytes = Math.max(64 * 1024, Math.floor(Number(row?.packet ?? 4 * 1024 * 1024) * 0.8));
      }
      if (typeof this.table !== 'string') return;
      if (this.createTable) await connection.query({ text: defaultTableDdl(this.driver!.dialect, quoteTable(this.driver!.dialect, this.table)), values: [] });
      try {
        this.shapes.set(this.table, Promise.resolve(await describeTable(connection, this.driver!.dialect, this.table, this.columns, this.idColumn)));
      } catch (error) {
        if (error instanceof SqlTableError) throw new SinkConfigError(`${this.label}: ${error.message}.`, 'table');
        throw error;
      }
    }).catch((error: unknown) => {
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
  private values(item: SinkItem): unknown[] {
    const known = this.mapped.get(item);
    if (known) return known;
    itemId(item); // an item written outside the dispatcher (a test) gets its id here, for row(item)
    const row = this.row(item);
    if (typeof row !== 'object' || row === null) throw new Error(`${this.label}: row(item) must return an object of column values, got ${describeValue(row)}`);
    const values = this.columns.map((column) => columnValue(row[column]));
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
   * Writes one table's rows on one pool connection: one statement, split in halves to isolate a row the
   * database refuses. Confirms each row written, notes each skipped as a duplicate, fails the rest.
   */
  private async writeRows(driver: SqlDriver, shape: TableShape, entries: Entry[], signal: AbortSignal, progress: WriteProgress, duplicates: number[]): Promise<void> {
    await this.withConnection(async (connection) => {
      const send = async (rows: Entry[]) => {
        const ids = rows.map((r) => r.values[shape.idIndex]);
        let skipped: (id: unknown) => boolean;
        if (driver.dialect === 'postgres') {
          const inserted = await run(connection, pgInsert(shape, rows.map((r) => r.values), this.prepare), progress, signal);
          const written = new Set(inserted.map((r) => String(r.id)));
          skipped = (id) => !written.has(String(id));
        } else {
          const existing = await run(connection, mysqlExisting(shape, ids), progress, signal);
          await run(connection, mysqlInsert(shape, rows.map((r) => r.values)), progress, signal);
          const there = new Set(existing.map((r) => String(r.id)));
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
   * Runs `fn` on a connection of the pool, given back after (or destroyed, when the signal cut a
   * statement short). Waits for the connection only until the signal aborts.
   */
  private async withConnection<T>(fn: (connection: SqlConnection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const pending = this.driver!.acquire();
    if (signal && !(await new WriteProgress(0).until(pending, signal))) {
      pending.then((c) => c.release(), () => undefined); // it came too late: straight back to the pool
      throw signal.reason;
    }
    const connection = await pending;
    const guarded = new GuardedConnection(connection);
    try {
      return await fn(guarded);
    } finally {
      guarded.release();
    }
  }

  private async findDriver(context: SinkAttachContext): Promise<SqlDriver> {
    const client = this.client;
    const fail = (problem: string) =>
      new SinkConfigError(
        `${this.label}: ${problem}. Pass client: the injection token of the app's TypeORM DataSource (getDataSourceToken() of @nestjs/typeorm), Knex instance, pg Pool or mysql2 pool; ` +
          'the client itself; or a connection string (postgres://…, mysql://…) for a pool of the sink\'s own.',
        'client',
      );
    const driverOf = (value: unknown, where: string): SqlDriver | undefined => {
      try {
        return sqlDriverOf(value);
      } catch (error) {
        throw fail(`${where} is ${(error as Error).message}`);
      }
    };
    if (client === undefined) {
      const found = [...context.providers()].filter((p) => isSqlClient(p.instance));
      const distinct = [...new Map(found.map((p) => [p.instance, p])).values()];
      if (distinct.length === 1) return driverOf(distinct[0].instance, `the app's provider ${describeToken(distinct[0].token)}`)!;
      throw fail(distinct.length === 0 ? 'no SQL client found among the app\'s providers' : `the app has several SQL clients (${distinct.map((p) => describeToken(p.token)).join(', ')}), so which one to write to is not clear`);
    }
    if (typeof client === 'string' && CONNECTION_STRING.test(client)) {
      try {
        const own = await openOwnPool(client, this.maxConnections);
        this.closeOwnPool = own.close;
        return own.driver;
      } catch (error) {
        throw fail(`cannot open a pool for the connection string: ${(error as Error).message}`);
      }
    }
    const direct = driverOf(client, 'the client given');
    if (direct) return direct;
    const resolved = resolveToken(context, client);
    if (resolved === undefined || resolved === null) throw fail(`nothing is registered as ${describeToken(client)}`);
    const driver = driverOf(resolved, `the provider ${describeToken(client)}`);
    if (!driver) throw fail(`the provider ${describeToken(client)} is not a SQL client the sink knows (${describeValue(resolved)})`);
    return driver;
  }
}

/** A connection that is given back once, or destroyed instead when a statement on it was cut short. */
class GuardedConnection implements SqlConnection {
  private done = false;
  constructor(private readonly connection: SqlConnection) {}
  query(statement: Parameters<SqlConnection['query']>[0]) {
    return this.connection.query(statement);
  }
  release(): void {
    if (this.done) return;
    this.done = true;
    this.connection.release();
  }
  destroy(reason: unknown): void {
    if (this.done) return;
    this.done = true;
    this.connection.destroy(reason);
  }
}

/** Runs a statement until the signal aborts; then destroys the connection (which ends the statement) and throws the signal's reason. */
async function run(connection: SqlConnection, statement: Parameters<SqlConnection['query']>[0], progress: WriteProgress, signal: AbortSignal) {
  const work = connection.query(statement);
  if (await progress.until(work, signal)) return work;
  connection.destroy(signal.reason);
  throw signal.reason;
}

function rowBytes(values: unknown[]): number {
  let bytes = 4;
  for (const v of values) bytes += valueBytes(v);
  return bytes;
}

function checkKinds(label: string, value: unknown): readonly SinkKind[] {
  if (value === undefined) return SQL_SINK_DEFAULTS.kinds;
  if (!Array.isArray(value) || value.length === 0 || !value.every((k) => SINK_KINDS.includes(k))) {
    throw optionError(label, 'kinds', "must be a non-empty array of 'job', 'log', 'metric'", "Leave it out for all three.", value);
  }
  return Object.freeze([...value]);
}

function checkColumns(label: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((c) => typeof c === 'string' && /^[A-Za-z_][A-Za-z0-9_$]*$/.test(c)) || new Set(value).size !== value.length) {
    throw optionError(label, 'columns', 'must be a non-empty array of distinct column names', 'Use letters, digits, _ and $ (not first).', value);
  }
  return Object.freeze([...value]);
}
