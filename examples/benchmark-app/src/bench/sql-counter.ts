/**
 * The runner's own connection to the database of a SQL scenario (`pg-local`, `mysql-local`): checks
 * at the start that the database answers, then counts the rows of the server's table around every
 * run — the destination's own count, as the Bull scenarios count their wait list.
 */
import type { ScenarioId } from './types.js';
import { SQL_SCENARIOS } from './args.js';

export interface SqlCounter {
  /** Rows in `table` now. */
  count(table: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Connects to the scenario's database and runs `SELECT 1`. Rejects with a message that says how to
 * point the benchmark at a database (or leave the scenario out) when it cannot.
 */
export async function openSqlCounter(scenario: ScenarioId): Promise<SqlCounter> {
  const db = SQL_SCENARIOS[scenario];
  if (!db) throw new Error(`Scenario ${scenario} writes to no database.`);
  try {
    if (db.need === 'postgres') {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: db.url, connectionTimeoutMillis: 3000 });
      await client.connect();
      try {
        await client.query('SELECT 1');
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      return {
        count: async (table) => Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n),
        close: () => client.end(),
      };
    }
    const mysql = await import('mysql2/promise');
    const connection = await mysql.createConnection({ uri: db.url, connectTimeout: 3000 });
    try {
      await connection.query('SELECT 1');
    } catch (error) {
      await connection.end().catch(() => undefined);
      throw error;
    }
    return {
      count: async (table) => {
        const [rows] = await connection.query(`SELECT count(*) AS n FROM \`${table}\``);
        return Number((rows as Array<{ n: number | string }>)[0].n);
      },
      close: () => connection.end(),
    };
  } catch (error) {
    const reason =
      error instanceof AggregateError
        ? error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join('; ')
        : error instanceof Error
          ? error.message || error.name
          : String(error);
    throw new Error(
      `Scenario ${scenario} needs a ${db.what} database at ${db.url} (${reason}). Start one there, or set ${db.env} ` +
        `to the URL of a database whose user may create and drop tables, or leave ${scenario} out (--scenarios).`,
    );
  }
}
