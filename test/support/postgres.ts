import pg from 'pg';

/**
 * The PostgreSQL the tests use: `$DW_TEST_PG_URL`, or the machine's server on 127.0.0.1:5432 (trust
 * auth, database `test`). Tests create and drop tables of their own, named after the run.
 */
export const PG_URL = process.env.DW_TEST_PG_URL || 'postgresql://postgres@127.0.0.1:5432/test';

/** Fails (never skips) with how to provide a PostgreSQL when none answers at {@link PG_URL}. */
export async function requirePostgres(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${PG_URL} (${(error as Error).message}). These tests need a real PostgreSQL: start the machine's ` +
        "(pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start), or set DW_TEST_PG_URL to one where the tests may create tables.",
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
