import type { SqlStatement } from '../sql-clients';
import type { SqlDialect } from '../sql-sink.options';

/** The outbox table's columns the relay and `DeferredOutbox` use. */
export const OUTBOX_COLUMNS = Object.freeze(['id', 'seq', 'item', 'created_at', 'claimed_until', 'attempts'] as const);

/** The outbox table's DDL (`table` quoted): the item id as primary key, the item as JSON, the order of commit, the claim. */
export function outboxTableDdl(dialect: SqlDialect, table: string): string[] {
  if (dialect === 'postgres') {
    return [
      `CREATE TABLE IF NOT EXISTS ${table} (
  id text PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  item jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  claimed_until timestamptz,
  attempts integer NOT NULL DEFAULT 0
)`,
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
  id varchar(64) NOT NULL PRIMARY KEY,
  seq bigint NOT NULL AUTO_INCREMENT UNIQUE,
  item json NOT NULL,
  created_at datetime(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  claimed_until datetime(3) NULL,
  attempts int NOT NULL DEFAULT 0
)`,
  ];
}

/** The insert of rows (id, item as JSON) through the caller's transaction, with its placeholders. */
export function outboxInsert(dialect: SqlDialect, placeholders: 'dollar' | 'question', table: string, rows: ReadonlyArray<readonly [string, string]>): SqlStatement {
  const values: unknown[] = [];
  const json = dialect === 'postgres' ? '::jsonb' : '';
  const tuples = rows.map(([id, item]) => {
    values.push(id, item);
    return placeholders === 'dollar' ? `($${values.length - 1}, $${values.length}${json})` : `(?, ?${json})`;
  });
  return { text: `INSERT INTO ${table} (id, item) VALUES ${tuples.join(', ')}`, values };
}

/**
 * PostgreSQL: claims up to `limit` committed rows nobody holds (or whose claim expired), oldest
 * first, skipping rows another relay has locked this instant, in one statement.
 */
export function pgClaim(table: string, limit: number, leaseMs: number): SqlStatement {
  return {
    text:
      `UPDATE ${table} SET claimed_until = now() + $2 * interval '1 millisecond', attempts = attempts + 1 ` +
      `WHERE id IN (SELECT id FROM ${table} WHERE claimed_until IS NULL OR claimed_until < now() ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED) ` +
      'RETURNING id, seq, item, attempts',
    values: [limit, leaseMs],
  };
}

/** MySQL / MariaDB: the claim's read, inside a transaction (`FOR UPDATE SKIP LOCKED`, MySQL 8 and MariaDB 10.6 or later). */
export function mysqlClaimRead(table: string, limit: number): SqlStatement {
  return {
    text: `SELECT id, seq, item, attempts FROM ${table} WHERE claimed_until IS NULL OR claimed_until < NOW(3) ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED`,
    values: [limit],
  };
}

/** MySQL / MariaDB: the claim's write, in the same transaction as its read. */
export function mysqlClaimWrite(table: string, ids: readonly string[], leaseMs: number): SqlStatement {
  return {
    text: `UPDATE ${table} SET claimed_until = NOW(3) + INTERVAL ? MICROSECOND, attempts = attempts + 1 WHERE id IN (${ids.map(() => '?').join(', ')})`,
    values: [leaseMs * 1000, ...ids],
  };
}

/** Deletes settled rows. */
export function outboxDelete(dialect: SqlDialect, table: string, ids: readonly string[]): SqlStatement {
  return dialect === 'postgres'
    ? { text: `DELETE FROM ${table} WHERE id = ANY($1::text[])`, values: [ids] }
    : { text: `DELETE FROM ${table} WHERE id IN (${ids.map(() => '?').join(', ')})`, values: [...ids] };
}

/** Gives claimed rows back (their items were not taken: a full queue, a shutdown), for the next round. */
export function outboxRelease(dialect: SqlDialect, table: string, ids: readonly string[]): SqlStatement {
  return dialect === 'postgres'
    ? { text: `UPDATE ${table} SET claimed_until = NULL WHERE id = ANY($1::text[])`, values: [ids] }
    : { text: `UPDATE ${table} SET claimed_until = NULL WHERE id IN (${ids.map(() => '?').join(', ')})`, values: [...ids] };
}

/** Rows waiting (claimed or not): for stats and health. */
export function outboxBacklog(table: string): SqlStatement {
  return { text: `SELECT COUNT(*) AS n FROM ${table}`, values: [] };
}

/** Extends the claim on rows whose items this instance is still delivering. */
export function outboxRenew(dialect: SqlDialect, table: string, ids: readonly string[], leaseMs: number): SqlStatement {
  return dialect === 'postgres'
    ? { text: `UPDATE ${table} SET claimed_until = now() + $2 * interval '1 millisecond' WHERE id = ANY($1::text[])`, values: [ids, leaseMs] }
    : { text: `UPDATE ${table} SET claimed_until = NOW(3) + INTERVAL ? MICROSECOND WHERE id IN (${ids.map(() => '?').join(', ')})`, values: [leaseMs * 1000, ...ids] };
}
