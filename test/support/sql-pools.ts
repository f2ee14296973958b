import { createPool as createMysqlPool } from 'mysql2';
import pg from 'pg';

/** An app's pool for the SQL tests: the client to register, a committed transaction through it, its close. */
export interface TestSqlPool {
  client: object;
  /** Runs `fn` in a transaction on one of the pool's connections (the `tx` handed to the outbox): committed, or rolled back if it throws. */
  transaction(fn: (tx: unknown) => Promise<unknown>): Promise<void>;
  close(): Promise<void>;
}

/** A `pg` Pool to `url`; a connection the server cuts while idle is not an uncaught error. */
export function pgTestPool(url: string, max = 5): TestSqlPool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => undefined);
  return {
    client: pool,
    transaction: async (fn) => {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        await fn(c);
        await c.query('COMMIT');
      } catch (error) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        c.release();
      }
    },
    close: () => pool.end(),
  };
}

/** A `mysql2` pool to `url` (transactions through its promise connections). */
export function mysqlTestPool(url: string, connectionLimit = 5): TestSqlPool {
  const pool = createMysqlPool({ uri: url, connectionLimit });
  return {
    client: pool,
    transaction: async (fn) => {
      const c = await pool.promise().getConnection();
      try {
        await c.beginTransaction();
        await fn(c);
        await c.commit();
      } catch (error) {
        await c.rollback().catch(() => undefined);
        throw error;
      } finally {
        c.release();
      }
    },
    close: () => new Promise<void>((resolve) => pool.end(() => resolve())),
  };
}

/** `url` with its port replaced (the same database through a TCP proxy). */
export function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
}
