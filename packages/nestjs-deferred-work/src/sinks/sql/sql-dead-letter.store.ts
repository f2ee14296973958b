import { matchesDeadLetterFilter } from '../../core/dead-letter-filter';
import type { DeadLetterFilter, DeadLetterPage, DeadLetterQuery, DeadLetterRecord, DeadLetterStore } from '../../core/dead-letter-store.interface';
import { chunk } from '../kit/chunks';
import { checkOptionsObject, checkWholeNumber, optionError } from '../kit/option-checks';
import { sqlDriverOf, type SqlConnection, type SqlDriver } from './sql-clients';
import { withinTime } from './sql-connections';
import { runDdl } from './sql-ddl';
import type { SqlDialect } from './sql-sink.options';
import { quoteTable } from './sql-tables';

/** Options of {@link SqlDeadLetterStore}. */
export interface SqlDeadLetterStoreOptions {
  /** The app's client: a `pg` Pool, a `mysql2` pool, a TypeORM `DataSource` or a Knex instance. */
  client: unknown;
  /** The table, created at bootstrap if missing. Default `'deferred_dead_letters'`. */
  table?: string;
  /** Records kept at most; the oldest go first. Default `10000`. */
  maxCount?: number;
  /** Age after which records are deleted, in ms. Default `604800000` (7 days). */
  maxAgeMs?: number;
  /**
   * How long one call of the store (an add, a list, a get, a count, a remove, a purge, creating the
   * table) may take, waiting for a pool connection included, in ms (at most 600000). Past it the call fails — an add's
   * records are then in `DeferredWork.deadLetters()`, possibly not or only in part in the table, with a
   * warning; a list or a count throws to its caller — and a statement still
   * running has its connection destroyed, so a database that stopped answering does not keep the
   * app's pool connections. Default `10000`.
   */
  timeoutMs?: number;
}

const LABEL = 'SqlDeadLetterStore';

/** Most records in one `DELETE` + `INSERT` of an add, and most bytes of their JSON as UTF-8 (a few MiB sent, escaped, under the default packet limits of MySQL and MariaDB). */
const ADD_ROWS = 100;
const ADD_BYTES = 1_048_576;

/**
 * Dead letters in a table of the app's PostgreSQL or MySQL / MariaDB, through its own client (a
 * connection of its pool per call): one row per record (`id` unique, `sink`, `reason`, `at` for the
 * filters, `record` its JSON; `seq` orders and pages). They outlive the process and are shared by the
 * replicas. Bounded by count and age, applied after every add.
 */
export class SqlDeadLetterStore implements DeadLetterStore {
  readonly description: string;
  private readonly driver: SqlDriver;
  private readonly table: string;
  private readonly maxCount: number;
  private readonly maxAgeMs: number;
  private readonly timeoutMs: number;

  constructor(options: SqlDeadLetterStoreOptions) {
    checkOptionsObject(LABEL, options, "new SqlDeadLetterStore({ client: pool, table: 'deferred_dead_letters' })");
    const driver = sqlDriverOf(options.client);
    if (!driver) throw optionError(LABEL, 'client', "must be the app's pg Pool, mysql2 pool, TypeORM DataSource or Knex instance", 'Pass the client your app queries with.', options.client);
    this.driver = driver;
    const table = options.table ?? 'deferred_dead_letters';
    this.table = quoteTable(driver.dialect, table);
    this.maxCount = checkWholeNumber(LABEL, 'maxCount', options.maxCount, { min: 1, fallback: 10_000 });
    this.maxAgeMs = checkWholeNumber(LABEL, 'maxAgeMs', options.maxAgeMs, { min: 1, fallback: 7 * 24 * 3600 * 1000, unit: 'ms' });
    this.timeoutMs = checkWholeNumber(LABEL, 'timeoutMs', options.timeoutMs, { min: 1, max: 600_000, fallback: 10_000, unit: 'ms' });
    this.description = `sql (${table})`;
  }

  private get dialect(): SqlDialect {
    return this.driver.dialect;
  }

  /** Creates the table (and its indexes) if missing, one replica at a time (see `runDdl`). */
  async open(): Promise<void> {
    await this.with((c) => runDdl(c, this.dialect, [deadLetterTableDdl(this.dialect, this.table)], this.timeoutMs));
  }

  /**
   * Adds the records, each replacing one kept with the same id: per 100 records (and 1 MiB of JSON), a
   * `DELETE` of their ids and one multi-row `INSERT`, in a transaction (a chunk that fails leaves the
   * records it would have replaced as they were); then the bounds by age and count.
   */
  async add(records: DeadLetterRecord[]): Promise<void> {
    await this.with(async (c) => {
      for (const rows of addChunks(records)) {
        const p = this.params();
        const q = this.params();
        const tuples = rows.map(({ record, json }) => `(${[q.add(record.id), q.add(record.sink), q.add(record.reason), q.add(record.at), q.add(json)].join(', ')})`);
        await c.query({ text: 'BEGIN', values: [] });
        try {
          await c.query({ text: `DELETE FROM ${this.table} WHERE id IN (${rows.map((row) => p.add(row.record.id)).join(', ')})`, values: p.values });
          await c.query({ text: `INSERT INTO ${this.table} (id, sink, reason, at, record) VALUES ${tuples.join(', ')}`, values: q.values });
          await c.query({ text: 'COMMIT', values: [] });
        } catch (error) {
          // a connection cut at the timeout is destroyed (the server rolls back); this one goes back to the pool clean
          await c.query({ text: 'ROLLBACK', values: [] }).catch(() => undefined);
          throw error;
        }
      }
      const age = this.params();
      await c.query({ text: `DELETE FROM ${this.table} WHERE at < ${age.add(Date.now() - this.maxAgeMs)}`, values: age.values });
      const count = this.params();
      // The derived table lets MySQL read the table it deletes from.
      const cut = `SELECT seq FROM (SELECT seq FROM ${this.table} ORDER BY seq DESC LIMIT 1 OFFSET ${count.add(this.maxCount)}) oldest`;
      await c.query({ text: `DELETE FROM ${this.table} WHERE seq <= (${cut})`, values: count.values });
    });
  }

  async list(query: DeadLetterQuery): Promise<DeadLetterPage> {
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 100)), 1000);
    const p = this.params();
    const where = this.where(query, p, query.after === undefined ? undefined : Number(query.after));
    const rows = await this.with((c) =>
      c.query({ text: `SELECT seq, record FROM ${this.table}${where} ORDER BY seq LIMIT ${p.add(limit)}`, values: p.values }),
    );
    const records = rows.map((row) => JSON.parse(String(row.record)) as DeadLetterRecord).filter((r) => matchesDeadLetterFilter(r, query));
    return rows.length === limit ? { records, next: String(rows[rows.length - 1].seq) } : { records };
  }

  async get(id: string): Promise<DeadLetterRecord | undefined> {
    const p = this.params();
    const rows = await this.with((c) => c.query({ text: `SELECT record FROM ${this.table} WHERE id = ${p.add(id)}`, values: p.values }));
    return rows.length === 0 ? undefined : (JSON.parse(String(rows[0].record)) as DeadLetterRecord);
  }

  async count(filter: DeadLetterFilter): Promise<number> {
    const p = this.params();
    const rows = await this.with((c) => c.query({ text: `SELECT COUNT(*) AS n FROM ${this.table}${this.where(filter, p)}`, values: p.values }));
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Deletes the rows of these ids and returns how many this call deleted, never one another replica
   * deleted meanwhile: a redrive's claim. PostgreSQL: one `DELETE … RETURNING`; MySQL: the rows locked
   * (`SELECT … FOR UPDATE`) and deleted in one transaction, so a second caller waits and finds none.
   */
  async remove(ids: readonly string[]): Promise<number> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return 0;
    return this.deleteWhere((p) => ` WHERE id IN (${unique.map((id) => p.add(id)).join(', ')})`);
  }

  async purge(filter: DeadLetterFilter): Promise<number> {
    return this.deleteWhere((p) => this.where(filter, p));
  }

  /**
   * Deletes the rows of a condition and returns how many this call deleted (the clients report no
   * affected rows): PostgreSQL counts its `DELETE … RETURNING`; MySQL counts the rows it locked
   * (`FOR UPDATE`) and deletes them in the same transaction, so a concurrent purge or redrive is not
   * counted twice.
   */
  private async deleteWhere(condition: (p: Params) => string): Promise<number> {
    const p = this.params();
    const where = condition(p);
    if (this.dialect === 'postgres') {
      const rows = await this.with((c) => c.query({ text: `WITH gone AS (DELETE FROM ${this.table}${where} RETURNING 1) SELECT COUNT(*) AS n FROM gone`, values: p.values }));
      return Number(rows[0]?.n ?? 0);
    }
    return this.lockedDelete(where, p.values);
  }

  /**
   * MySQL: locks the rows of a condition (`SELECT … FOR UPDATE`) and deletes them in one transaction;
   * returns how many. Two such deletes over overlapping rows (a purge and a redrive on two replicas) can
   * deadlock: the one MySQL rolls back is started again, up to `DEADLOCK_TRIES` times.
   */
  private async lockedDelete(where: string, values: unknown[]): Promise<number> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.lockedDeleteOnce(where, values);
      } catch (error) {
        if (tries >= DEADLOCK_TRIES || (error as { code?: unknown })?.code !== 'ER_LOCK_DEADLOCK') throw error;
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * tries));
      }
    }
  }

  private lockedDeleteOnce(where: string, values: unknown[]): Promise<number> {
    return this.with(async (c) => {
      await c.query({ text: 'BEGIN', values: [] });
      try {
        const rows = await c.query({ text: `SELECT id FROM ${this.table}${where} FOR UPDATE`, values });
        if (rows.length > 0) await c.query({ text: `DELETE FROM ${this.table}${where}`, values });
        await c.query({ text: 'COMMIT', values: [] });
        return rows.length;
      } catch (error) {
        await c.query({ text: 'ROLLBACK', values: [] }).catch(() => undefined);
        throw error;
      }
    });
  }

  private where(filter: DeadLetterFilter, p: Params, afterSeq?: number): string {
    const parts: string[] = [];
    if (afterSeq !== undefined && Number.isFinite(afterSeq)) parts.push(`seq > ${p.add(afterSeq)}`);
    if (filter.sink !== undefined) parts.push(`sink = ${p.add(filter.sink)}`);
    if (filter.reason !== undefined) parts.push(`reason = ${p.add(filter.reason)}`);
    // The last error's code is in the record's JSON (no column of its own: tables made before the filter work as they are).
    if (filter.code !== undefined) parts.push(`${this.dialect === 'postgres' ? "CAST(record AS jsonb) ->> 'code'" : "JSON_UNQUOTE(JSON_EXTRACT(record, '$.code'))"} = ${p.add(filter.code)}`);
    if (filter.from !== undefined) parts.push(`at >= ${p.add(filter.from)}`);
    if (filter.to !== undefined) parts.push(`at < ${p.add(filter.to)}`);
    return parts.length === 0 ? '' : ` WHERE ${parts.join(' AND ')}`;
  }

  private params(): Params {
    return new Params(this.dialect);
  }

  /** `fn` on a connection of the pool, the whole call bounded by `timeoutMs`. */
  private with<T>(fn: (connection: SqlConnection) => Promise<T>): Promise<T> {
    return withinTime(this.driver, this.timeoutMs, () => new Error(`${LABEL}: the database did not answer within ${this.timeoutMs} ms (timeoutMs)`), fn);
  }
}

/**
 * An add's records as rows to insert, in order, in chunks of at most {@link ADD_ROWS} rows and
 * {@link ADD_BYTES} of JSON (a larger record alone: it counts as the whole limit); a record whose id
 * comes again later in the same add is left out for the later one, as a second add would replace it.
 */
function addChunks(records: readonly DeadLetterRecord[]): Array<Array<{ record: DeadLetterRecord; json: string }>> {
  const last = new Map<string, number>();
  records.forEach((record, index) => last.set(record.id, index));
  const rows = records.filter((record, index) => last.get(record.id) === index).map((record) => ({ record, json: JSON.stringify(record) }));
  const size = (row: { json: string }) => Math.min(Buffer.byteLength(row.json), ADD_BYTES);
  return chunk(rows, { maxCount: ADD_ROWS, maxBytes: ADD_BYTES }, size).chunks.map((c) => c.values);
}

/** How many times a MySQL delete that lost a deadlock is tried in all. */
const DEADLOCK_TRIES = 5;

/** A statement's values and their placeholders (`$1` on PostgreSQL, `?` on MySQL). */
class Params {
  readonly values: unknown[] = [];
  constructor(private readonly dialect: SqlDialect) {}
  add(value: unknown): string {
    this.values.push(value);
    return this.dialect === 'postgres' ? `$${this.values.length}` : '?';
  }
}

/** The dead-letter table's DDL (`table` quoted). */
export function deadLetterTableDdl(dialect: SqlDialect, table: string): string {
  return dialect === 'postgres'
    ? `CREATE TABLE IF NOT EXISTS ${table} (seq BIGSERIAL PRIMARY KEY, id VARCHAR(255) NOT NULL UNIQUE, sink VARCHAR(255) NOT NULL, reason VARCHAR(32) NOT NULL, at BIGINT NOT NULL, record TEXT NOT NULL)`
    : `CREATE TABLE IF NOT EXISTS ${table} (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id VARCHAR(255) NOT NULL, sink VARCHAR(255) NOT NULL, reason VARCHAR(32) NOT NULL, at BIGINT NOT NULL, record LONGTEXT NOT NULL, UNIQUE KEY dead_letter_id (id))`;
}
