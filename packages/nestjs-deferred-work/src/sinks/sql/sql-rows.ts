import type { SinkItem } from '../../core/items/deferred-item.interface';
import { itemId } from '../kit/item-id';
import { itemParts } from '../kit/item-parts';
import type { SqlDialect } from './sql-sink.options';

/** The default table's columns, in order. */
export const DEFAULT_COLUMNS = Object.freeze(['id', 'kind', 'name', 'payload', 'request_id', 'trace_id', 'span_id', 'created_at'] as const);

/** A column of the default table. */
export type DefaultColumn = (typeof DEFAULT_COLUMNS)[number];

/** The default table's DDL, per dialect (`table` quoted). */
export function defaultTableDdl(dialect: SqlDialect, table: string): string {
  if (dialect === 'postgres') {
    return `CREATE TABLE IF NOT EXISTS ${table} (
  id text PRIMARY KEY,
  kind text NOT NULL,
  name text NOT NULL,
  payload jsonb NOT NULL,
  request_id text,
  trace_id text,
  span_id text,
  created_at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
)`;
  }
  return `CREATE TABLE IF NOT EXISTS ${table} (
  id varchar(64) NOT NULL PRIMARY KEY,
  kind varchar(16) NOT NULL,
  name varchar(255) NOT NULL,
  payload json NOT NULL,
  request_id varchar(255) NULL,
  trace_id char(32) NULL,
  span_id char(16) NULL,
  created_at datetime(3) NOT NULL,
  recorded_at datetime(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
)`;
}

/**
 * An item as a row of the default table: `name` is a job's queue, a log record's level, a metric's
 * name; `payload` is everything else of the item (a job's `name`, `data` and `opts`; a record's
 * `message`, `fields` and `context`; a point's `value`, `tags` and `op`).
 */
export function defaultRow(item: SinkItem): Record<DefaultColumn, unknown> {
  const c = item.correlation;
  const { name, payload } = itemParts(item);
  return {
    id: itemId(item),
    kind: item.kind,
    name,
    payload,
    request_id: c?.requestId ?? null,
    trace_id: c?.traceId ?? null,
    span_id: c?.spanId ?? null,
    created_at: new Date(item.createdAt),
  };
}

/** Whether a value is written as JSON: a plain object or an array (not a `Date` or a `Buffer`). */
function isJsonValue(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !(value instanceof Date) && !Buffer.isBuffer(value) && !ArrayBuffer.isView(value);
}

/**
 * A row's value as the driver takes it: `undefined` → `NULL`; objects and arrays → JSON text (for a
 * `json`/`jsonb` column, or text); a `BigInt` → its digits; anything else as it is. Throws when a
 * value cannot be written as JSON (a `BigInt` inside an object, a cycle).
 */
export function columnValue(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (isJsonValue(value)) return JSON.stringify(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`${value} is not a number SQL stores; give null, or a string`);
  if (value instanceof Date && Number.isNaN(value.getTime())) throw new Error('an invalid Date; give a valid Date, or null');
  if (typeof value === 'symbol' || typeof value === 'function') throw new Error(`a ${typeof value} is not a column value`);
  return value;
}

/** Roughly how many bytes a value takes in a MySQL statement (for `max_allowed_packet`). */
export function valueBytes(value: unknown): number {
  if (value === null) return 4;
  if (typeof value === 'string') return Buffer.byteLength(value) * 2 + 2; // escaped, quoted: at most twice
  if (Buffer.isBuffer(value)) return value.length * 2 + 3;
  return 32;
}

/** The estimated bytes of a row of `values` in a statement (what MySQL's `max_allowed_packet` bounds). */
export function rowBytes(values: unknown[]): number {
  let bytes = 4;
  for (const v of values) bytes += valueBytes(v);
  return bytes;
}
