import { createHash } from 'node:crypto';
import type { SqlConnection, SqlStatement } from './sql-clients';
import type { SqlDialect } from './sql-sink.options';

/** What the sink knows of a table it writes: checked once against the database, then one statement text per row count. */
export interface TableShape {
  /** As the user named it. */
  table: string;
  /** Quoted for the dialect (`"schema"."name"`, `` `name` ``). */
  quoted: string;
  /** The columns the sink fills, in the order of its `columns`. */
  columns: readonly string[];
  /** Position of the id column in `columns`. */
  idIndex: number;
  /** PostgreSQL: each column's type, as `format_type` gives it (the record of the insert). */
  types: readonly string[];
}

/** A problem with a table that the user fixes (missing, a missing column, no unique id): not retried. */
export class SqlTableError extends Error {
  override readonly name = 'SqlTableError';
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/** Checks a table name (`name` or `schema.name`) and returns its parts; throws with the fix. */
export function tableParts(table: string): string[] {
  const parts = typeof table === 'string' ? table.split('.') : [];
  if (parts.length === 0 || parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new SqlTableError(`table ${JSON.stringify(table)} is not a table name: use letters, digits, _ and $ (not first), as "name" or "schema.name"`);
  }
  return parts;
}

/** An identifier quoted for the dialect (checked by the caller). */
export function quote(dialect: SqlDialect, name: string): string {
  return dialect === 'postgres' ? `"${name}"` : `\`${name}\``;
}

/** A table name quoted for the dialect. */
export function quoteTable(dialect: SqlDialect, table: string): string {
  return tableParts(table)
    .map((p) => quote(dialect, p))
    .join('.');
}

/**
 * Reads the table's columns and unique indexes and checks that it can take the sink's rows: the table
 * exists, has every column of `columns`, and the id column has a unique index of its own (so that a row
 * written again is skipped). Throws a {@link SqlTableError} naming what to fix.
 */
export async function describeTable(connection: SqlConnection, dialect: SqlDialect, table: string, columns: readonly string[], idColumn: string): Promise<TableShape> {
  const parts = tableParts(table);
  const quoted = parts.map((p) => quote(dialect, p)).join('.');
  const schema = parts.length === 2 ? parts[0] : null;
  const name = parts[parts.length - 1];
  const found = new Map<string, string>();
  let unique: boolean;
  if (dialect === 'postgres') {
    const rows = await connection.query({
      text: 'SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped',
      values: [quoted],
    });
    for (const row of rows) found.set(String(row.name), String(row.type));
    const idx = await connection.query({
      text:
        'SELECT 1 AS ok FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] ' +
        // one key column (INCLUDE columns allowed); not partial, not deferrable, not a failed concurrent build: none of those can be the arbiter of ON CONFLICT (id)
        'WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indimmediate AND i.indisvalid AND a.attname = $2',
      values: [quoted, idColumn],
    });
    unique = idx.length > 0;
  } else {
    const rows = await connection.query({
      text: 'SELECT COLUMN_NAME AS name, DATA_TYPE AS type FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?',
      values: [schema, name],
    });
    for (const row of rows) found.set(String(row.name ?? row.NAME).toLowerCase(), String(row.type ?? row.TYPE));
    const idx = await connection.query({
      text:
        'SELECT INDEX_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0 ' +
        'GROUP BY INDEX_NAME HAVING COUNT(*) = 1 AND LOWER(MAX(COLUMN_NAME)) = LOWER(?)',
      values: [schema, name, idColumn],
    });
    unique = idx.length > 0;
  }
  if (found.size === 0) throw new SqlTableError(`table ${table} does not exist. Create it (the default table's DDL is in docs/sinks/sql.md, or set createTable: true for it)`);
  const key = (c: string) => (dialect === 'mysql' ? c.toLowerCase() : c);
  const missing = columns.filter((c) => !found.has(key(c)));
  if (missing.length > 0) {
    throw new SqlTableError(`table ${table} has no column ${missing.map((c) => JSON.stringify(c)).join(', ')} (it has ${[...found.keys()].join(', ')}). Add it, or map your row to the columns it has`);
  }
  const types = columns.map((c) => found.get(key(c))!);
  const array = columns.find((c, i) => dialect === 'postgres' && types[i].endsWith('[]'));
  if (array) throw new SqlTableError(`column ${JSON.stringify(array)} of table ${table} is an array (${found.get(array)}), which the sink does not write. Use a json or jsonb column: arrays are written as JSON`);
  if (!unique) {
    throw new SqlTableError(
      `column ${JSON.stringify(idColumn)} of table ${table} has no unique index of its own, so a row written again (a retry, a replay) would be a second row. ` +
        `Make it the primary key, or add a unique index on it alone (not partial, not deferrable)`,
    );
  }
  return { table, quoted, columns, idIndex: columns.indexOf(idColumn), types };
}

const jsonColumns = new WeakMap<TableShape, readonly number[]>();

/** The indexes of a table's `json` / `jsonb` columns (PostgreSQL), worked out once per table shape. */
export function jsonColumnsOf(shape: TableShape): readonly number[] {
  let found = jsonColumns.get(shape);
  if (!found) jsonColumns.set(shape, (found = shape.types.flatMap((type, c) => (type === 'json' || type === 'jsonb' ? [c] : []))));
  return found;
}

/**
 * The PostgreSQL insert of a batch: one constant text whose one parameter is the batch as a JSON
 * array of rows (`jsonb_to_recordset`), skipping ids already there and returning those inserted. The
 * same text for every batch (prepared once per connection); no limit on parameters; measured faster,
 * and a third cheaper in Node CPU, than an array parameter per column (`unnest`), whose elements `pg`
 * escapes one by one.
 */
export function pgInsert(shape: TableShape, rows: readonly unknown[][], prepare: boolean): SqlStatement {
  const cols = shape.columns.map((c) => quote('postgres', c));
  const id = cols[shape.idIndex];
  const record = cols.map((c, i) => `${c} ${shape.types[i]}`);
  const text = `INSERT INTO ${shape.quoted} (${cols.join(', ')}) SELECT ${cols.join(', ')} FROM jsonb_to_recordset($1::jsonb) AS r(${record.join(', ')}) ON CONFLICT (${id}) DO NOTHING RETURNING ${id} AS id`;
  const jsonAt = jsonColumnsOf(shape);
  const json = shape.types.map((_, c) => jsonAt.includes(c));
  const keys = shape.columns.map((c) => `${JSON.stringify(c)}:`);
  let doc = '[';
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    doc += r === 0 ? '{' : ',{';
    for (let c = 0; c < keys.length; c++) doc += (c === 0 ? '' : ',') + keys[c] + jsonValue(row[c], json[c]);
    doc += '}';
  }
  doc += ']';
  return prepare ? { name: statementName(text), text, values: [doc] } : { text, values: [doc] };
}

/**
 * A row's value in the batch's JSON: for a `json`/`jsonb` column, its JSON text as it is (objects were
 * written as JSON already; a value that is not JSON fails its row, as PostgreSQL would refuse it in
 * that column); else as a JSON value (a date as its ISO text, a buffer as `bytea` hex).
 */
function jsonValue(value: unknown, json: boolean): string {
  if (value === null || value === undefined) return 'null';
  if (json) return typeof value === 'string' ? value : JSON.stringify(value);
  if (value instanceof Date) return `"${value.toISOString()}"`;
  if (Buffer.isBuffer(value)) return `"\\\\x${value.toString('hex')}"`;
  return JSON.stringify(value);
}

/**
 * The MySQL insert of a chunk's new rows: a plain multi-row `INSERT … VALUES`. Not `INSERT IGNORE`,
 * which would turn a bad value into a warning and write it mangled, nor `ON DUPLICATE KEY UPDATE`,
 * which answers a clash on any unique key as "already there": the rows already there are left out
 * before (see `mysqlExisting`).
 */
export function mysqlInsert(shape: TableShape, rows: readonly unknown[][]): SqlStatement {
  const cols = shape.columns.map((c) => quote('mysql', c));
  const one = `(${cols.map(() => '?').join(', ')})`;
  return {
    text: `INSERT INTO ${shape.quoted} (${cols.join(', ')}) VALUES ${rows.map(() => one).join(', ')}`,
    values: rows.flat(),
  };
}

/** The MySQL query of which of `ids` are in the table already (mysql2 reports a skipped duplicate and an insert alike). */
export function mysqlExisting(shape: TableShape, ids: readonly unknown[]): SqlStatement {
  const id = quote('mysql', shape.columns[shape.idIndex]);
  return { text: `SELECT ${id} AS id FROM ${shape.quoted} WHERE ${id} IN (${ids.map(() => '?').join(', ')})`, values: [...ids] };
}

/** A prepared statement's name for its text: the same text, the same name, on every connection. */
function statementName(text: string): string {
  return `dw_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
}
