import { createConnection } from 'mysql2/promise';

/**
 * The MariaDB (or MySQL) the tests use: `$DW_TEST_MYSQL_URL`, or the machine's server on
 * 127.0.0.1:3306 (root without a password, database `test`). Tests create and drop tables of their
 * own, named after the run.
 */
export const MYSQL_URL = process.env.DW_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test';

/** Fails (never skips) with how to provide a MariaDB when none answers at {@link MYSQL_URL}. */
export async function requireMariaDb(): Promise<void> {
  try {
    const connection = await createConnection({ uri: MYSQL_URL, connectTimeout: 3000 });
    await connection.query('SELECT 1');
    await connection.end();
  } catch (error) {
    throw new Error(
      `MariaDB / MySQL is not reachable at ${MYSQL_URL} (${(error as Error).message}). These tests need a real server: start the machine's ` +
        '(service mariadb start), or set DW_TEST_MYSQL_URL to one where the tests may create tables.',
    );
  }
}
