import { SinkWriteError } from '../../core/errors/sink-write.error';
import { isolate } from '../kit/isolate';
import { describeValue } from '../kit/option-checks';
import type { WriteProgress } from '../kit/write-progress';
import type { SqlConnection, SqlDriver } from './sql-clients';
import { run, withConnection } from './sql-connections';
import { sqlErrorCode, sqlErrorKind } from './sql-errors';
import { jsonColumnsOf, mysqlExisting, mysqlInsert, pgInsert, type TableShape } from './sql-tables';

/** MySQL's and MariaDB's `ER_DUP_ENTRY`, as `sqlErrorCode` gives it. */
const DUPLICATE_ENTRY = '1062';

/** An item ready to write: its index in the batch and its row's values, in the order of the sink's columns. */
export interface RowEntry {
  index: number;
  values: RowValues;
}

/**
 * A row's values, with a mask of the columns `row(item)` gave a string (not an object the sink wrote as
 * JSON): bit `c` for column `c`, bit 30 for any column from 30 on.
 */
export type RowValues = unknown[] & { givenStrings?: number };

/** The bit of column `c` in `RowValues.givenStrings`. */
export const columnBit = (c: number): number => 1 << Math.min(c, 30);

/**
 * How `SqlSink` writes one table's rows on one connection of the pool: one statement (PostgreSQL's
 * insert, or MySQL's insert of the ids not there yet), split in halves to isolate a row the database
 * refuses, each row confirmed, noted as a duplicate, or failed with the database's code.
 */
export class SqlRowWrites {
  constructor(
    /** `SqlSink "<name>"`, what its messages start with. */
    private readonly label: string,
    /** PostgreSQL: each insert a named prepared statement (see `SqlSinkOptions.prepare`). */
    private readonly prepare: boolean,
  ) {}

  /**
   * Writes one table's rows on one pool connection: one statement, split in halves to isolate a row the
   * database refuses. Confirms each row written, notes each skipped as a duplicate, fails the rest.
   */
  async writeRows(driver: SqlDriver, shape: TableShape, entries: RowEntry[], signal: AbortSignal, progress: WriteProgress, duplicates: number[]): Promise<void> {
    if (driver.dialect === 'postgres') entries = this.withJsonChecked(shape, entries, progress);
    if (entries.length === 0) return;
    await withConnection(driver, async (connection) => {
      const send = async (rows: RowEntry[]) => {
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
  private async mysqlInsertNew(connection: SqlConnection, shape: TableShape, rows: RowEntry[], progress: WriteProgress, signal: AbortSignal): Promise<Set<string>> {
    const idOf = (r: RowEntry) => r.values[shape.idIndex];
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

  /**
   * PostgreSQL: the entries whose `json`/`jsonb` values are each one JSON value; the others fail for
   * good. A row's values go to the server inside one JSON document (see `pgInsert`), where an object
   * is written as its JSON text as it is — so a string given for such a column must be JSON text of one
   * value, or it could add keys or rows to the document.
   */
  private withJsonChecked(shape: TableShape, entries: RowEntry[], progress: WriteProgress): RowEntry[] {
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
