import type { SqlConnection } from './sql-clients';
import type { SqlDialect } from './sql-sink.options';

/**
 * The library's DDL (the tables of `SqlSink`'s `createTable`, the outbox's `createTable` and
 * `SqlDeadLetterStore`), run one process at a time per database, so that replicas booting together on
 * an empty database all start.
 *
 * Why a lock: PostgreSQL's `CREATE TABLE IF NOT EXISTS` checks the name, then creates the table, its
 * row type and its sequences; two sessions doing so at once both pass the check and all but one fail
 * (`23505` on `pg_type`, `42P07`, `42710`). Under the lock the next holder starts its statement after
 * the last one committed (a transaction's catalog changes are visible before its locks are released),
 * so it finds the table and skips it. MySQL and MariaDB hold a lock of their own on a table's name
 * while they check and create it, so one `CREATE TABLE IF NOT EXISTS` does not race there; the
 * library's lock keeps any DDL of several statements safe as well. Errors are not read as "already
 * there": a failure of the DDL — a permission, a syntax error — fails as it did, and the table's shape
 * is checked after, as before.
 */

/** PostgreSQL: the advisory lock's key, the library's own (the first 8 bytes of SHA-1 of "nestjs-deferred-work ddl"). */
const PG_DDL_LOCK = '348614961289182247';

/** MySQL / MariaDB: the user lock's name (server-wide: replicas of other databases on the server wait a moment for each other). */
const MYSQL_DDL_LOCK = 'nestjs-deferred-work ddl';

/** MySQL / MariaDB: `ER_NOT_SUPPORTED_YET`, what a Galera node refuses `GET_LOCK` with (MariaDB before MDEV-31325). */
const NOT_SUPPORTED = 1235;

/**
 * Runs `statements` (`CREATE TABLE IF NOT EXISTS …`) on `connection` under the library's DDL lock:
 * PostgreSQL, in one transaction holding `pg_advisory_xact_lock` (released by its commit or rollback,
 * also when the connection is cut, and kept within one transaction behind a pooler); MySQL / MariaDB,
 * between `GET_LOCK` and `RELEASE_LOCK` on the same connection (where DDL commits at once). The caller
 * bounds the whole call by `waitMs` (`atBootstrap`, `withinTime`: past it the connection is destroyed,
 * which ends a wait for the lock, and the lock); `GET_LOCK` waits a second longer, so that bound's error
 * is the one reported. A statement that fails rejects with the database's error, after a rollback; a
 * connection whose rollback or lock release failed is destroyed, not given back to the pool with a
 * transaction or a lock.
 */
export async function runDdl(connection: SqlConnection, dialect: SqlDialect, statements: readonly string[], waitMs: number): Promise<void> {
  const exec = (text: string, values: unknown[] = []) => connection.query({ text, values });
  if (dialect === 'postgres') {
    await exec('BEGIN');
    try {
      await exec(`SELECT pg_advisory_xact_lock(${PG_DDL_LOCK})`);
      for (const text of statements) await exec(text);
      await exec('COMMIT');
    } catch (error) {
      await exec('ROLLBACK').catch((cause: unknown) => connection.destroy(cause));
      throw error;
    }
    return;
  }
  let locked = false;
  try {
    const [row] = await exec('SELECT GET_LOCK(?, ?) AS locked', [MYSQL_DDL_LOCK, Math.ceil(waitMs / 1000) + 1]);
    locked = Number(row?.locked) === 1;
  } catch (error) {
    if ((error as { errno?: unknown })?.errno !== NOT_SUPPORTED) throw error;
  }
  // Not locked (a server that refuses user locks; an answer other than 1, which the caller's bound comes
  // before): the DDL runs as it did before the lock, safe for one CREATE TABLE IF NOT EXISTS (see above).
  // A connection whose lock cannot be released is destroyed: the session ends, and its lock with it
  const release = () => exec('SELECT RELEASE_LOCK(?) AS released', [MYSQL_DDL_LOCK]).catch((cause: unknown) => (connection.destroy(cause), Promise.reject(cause)));
  try {
    for (const text of statements) await exec(text);
  } catch (error) {
    if (locked) await release().catch(() => undefined);
    throw error;
  }
  if (locked) await release();
}
