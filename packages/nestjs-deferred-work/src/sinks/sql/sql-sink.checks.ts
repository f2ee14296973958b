import type { SinkItem } from '../../core/items/deferred-item.interface';
import { checkSinkBasics, checkString, checkWholeNumber, optionError, type SinkSettingsBase } from '../kit/option-checks';
import { DEFAULT_COLUMNS, defaultRow } from './sql-rows';
import { SQL_SINK_DEFAULTS, type SqlSinkOptions } from './sql-sink.options';
import { tableParts } from './sql-tables';

/** `SqlSink`'s options, checked, every default applied. */
export interface SqlSinkSettings extends SinkSettingsBase {
  readonly table: string | ((item: SinkItem) => string);
  readonly columns: readonly string[];
  readonly row: (item: SinkItem) => Record<string, unknown>;
  readonly idColumn: string;
  readonly createTable: boolean;
  readonly maxConnections: number;
  readonly bootstrapTimeoutMs: number;
  readonly prepare: boolean;
}

/** Checks `new SqlSink(options)`'s options. */
export function checkSqlSinkOptions(options: SqlSinkOptions | undefined): SqlSinkSettings {
  const example = '{ client: getDataSourceToken() } (or a Knex, pg or mysql2 pool, its token, or a connection string)';
  const { o, name, label, kinds } = checkSinkBasics('SqlSink', options, example, SQL_SINK_DEFAULTS);
  let table: string | ((item: SinkItem) => string);
  if (typeof o.table === 'function') table = o.table;
  else {
    table = checkString(label, 'table', o.table, { fallback: SQL_SINK_DEFAULTS.table });
    try {
      tableParts(table);
    } catch (error) {
      throw optionError(label, 'table', 'is not a table name', 'Use letters, digits, _ and $, as "name" or "schema.name", or a function of the item.', o.table);
    }
  }
  if (o.row !== undefined && typeof o.row !== 'function') throw optionError(label, 'row', 'must be a function of the item', 'Pass (item) => ({ column: value, … }), with columns listing them.', o.row);
  if (o.row && o.columns === undefined) throw optionError(label, 'columns', 'is required with "row"', 'List the columns your row fills, e.g. columns: [\'id\', \'event\', \'body\'], so the table can be checked at bootstrap.');
  const row = o.row ?? defaultRow;
  const columns = o.row ? checkColumns(label, o.columns) : DEFAULT_COLUMNS;
  if (!o.row && o.columns !== undefined) throw optionError(label, 'columns', 'is only taken with "row"', 'Leave it out for the default table, or pass row as well.');
  const idColumn = checkString(label, 'idColumn', o.idColumn, { fallback: SQL_SINK_DEFAULTS.idColumn });
  if (!columns.includes(idColumn)) {
    throw optionError(label, 'columns', `must include the id column "${idColumn}"`, 'Map it to item.id in your row, so that a row written again is skipped, or set idColumn to the column that holds it.');
  }
  const createTable = o.createTable ?? SQL_SINK_DEFAULTS.createTable;
  if (typeof createTable !== 'boolean') throw optionError(label, 'createTable', 'must be true or false', 'Leave it out for false.', o.createTable);
  if (createTable && o.row) throw optionError(label, 'createTable', 'only creates the default table', 'Create your own table with your migrations, or leave out row and columns.');
  if (createTable && typeof o.table === 'function') throw optionError(label, 'createTable', 'only creates a table named by a string', 'Create the tables table(item) chooses with your migrations, or give table as a string.');
  const maxConnections = checkWholeNumber(label, 'maxConnections', o.maxConnections, { min: 1, max: 64, fallback: SQL_SINK_DEFAULTS.maxConnections });
  const bootstrapTimeoutMs = checkWholeNumber(label, 'bootstrapTimeoutMs', o.bootstrapTimeoutMs, { min: 1, max: 600_000, fallback: SQL_SINK_DEFAULTS.bootstrapTimeoutMs, unit: 'ms' });
  const prepare = o.prepare ?? SQL_SINK_DEFAULTS.prepare;
  if (typeof prepare !== 'boolean') throw optionError(label, 'prepare', 'must be true or false', 'Leave it out for true.', o.prepare);
  return { name, label, kinds, client: o.client, table, columns, row, idColumn, createTable, maxConnections, bootstrapTimeoutMs, prepare };
}

function checkColumns(label: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((c) => typeof c === 'string' && /^[A-Za-z_][A-Za-z0-9_$]*$/.test(c)) || new Set(value).size !== value.length) {
    throw optionError(label, 'columns', 'must be a non-empty array of distinct column names', 'Use letters, digits, _ and $ (not first).', value);
  }
  return Object.freeze([...value]);
}
