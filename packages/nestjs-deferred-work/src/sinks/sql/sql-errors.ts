import { errorCode, errorMessage } from '../../core/error-message';
import { failureCode } from '../kit/failure-codes';

/**
 * What a database error means for the rows of a write, by the server's own code (PostgreSQL SQLSTATE,
 * MySQL / MariaDB errno) or the client's for a connection error:
 * - `row`: one row is bad (a NOT NULL, CHECK or length violation, a value the column type refuses):
 *   the statement is split to find it, and only it is dead-lettered, with the server's message;
 * - `transient`: the server or the link is busy or away (connection refused or reset, shutdown, too
 *   many connections, deadlock, serialization failure, read-only after a failover): retried with backoff.
 * Anything else counts as transient too: retried for `maxRetryDurationMs`, then dead-lettered (`expired`) with its code.
 */
export type SqlErrorKind = 'row' | 'transient';

/** PostgreSQL SQLSTATEs that one bad row causes. */
const PG_ROW = new Set([
  '23502', // not_null_violation
  '23503', // foreign_key_violation
  '23505', // unique_violation (on a column other than the id)
  '23514', // check_violation
  '23P01', // exclusion_violation
  '22001', // string_data_right_truncation (too long for varchar(n))
  '22003', // numeric_value_out_of_range
  '22007', // invalid_datetime_format
  '22008', // datetime_field_overflow
  '22021', // character_not_in_repertoire (a NUL byte in text)
  '22026', // string_data_length_mismatch (bit(n))
  '22P02', // invalid_text_representation (bad JSON, bad number)
  '22P05', // untranslatable_character (\u0000 in jsonb)
]);

/** MySQL / MariaDB errnos that one bad row causes. */
const MYSQL_ROW = new Set([
  1048, // ER_BAD_NULL_ERROR
  1062, // ER_DUP_ENTRY (on a unique key other than the id; an id written meanwhile is told apart by the sink)
  1264, // ER_WARN_DATA_OUT_OF_RANGE
  1265, // WARN_DATA_TRUNCATED
  1292, // ER_TRUNCATED_WRONG_VALUE (a bad date)
  1366, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
  1406, // ER_DATA_TOO_LONG
  1452, // ER_NO_REFERENCED_ROW_2 (foreign key)
  3140, // ER_INVALID_JSON_TEXT (MySQL)
  3144, // ER_INVALID_JSON_CHARSET (MySQL: binary data for a JSON column)
  3819, // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
  4025, // ER_CONSTRAINT_FAILED (MariaDB: CHECK, and JSON_VALID on a JSON column)
]);

/**
 * A database error's code as dead letters keep it: PostgreSQL's SQLSTATE (`57P01` the server shutting
 * down, `57P03` starting up, `08006` …), MySQL's and MariaDB's errno (`1040` too many connections,
 * `1053` shutting down; not mysql2's name for it, which is MySQL's: MariaDB's 4025, a failed CHECK, is
 * a different error in MySQL), or a connection error's code (`ECONNREFUSED`, `ECONNRESET`, mysql2's
 * `PROTOCOL_CONNECTION_LOST`; pg's codeless `Connection terminated unexpectedly` is `ECONNRESET`).
 */
export function sqlErrorCode(error: unknown): string | undefined {
  const e = error as { code?: unknown; errno?: unknown; sqlState?: unknown } | null;
  if (!e || typeof e !== 'object') return undefined;
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string') return String(e.errno);
  if (typeof e.code === 'string') return e.code;
  return failureCode(error);
}

/**
 * An error of getting a pool connection, carrying the code `sqlErrorCode` gives it (a MySQL errno, the
 * errno of a codeless pg error) where the error's own is another or none: the same code as when a
 * statement fails that way. The error itself when it already carries that code.
 */
export function withSqlCode(error: unknown): unknown {
  const code = sqlErrorCode(error);
  if (code === undefined || errorCode(error) === code) return error;
  return Object.assign(new Error(errorMessage(error), { cause: error }), { code });
}

/** What `error` means for the rows of the statement that failed with it. */
export function sqlErrorKind(error: unknown): SqlErrorKind {
  const e = error as { code?: unknown; errno?: unknown; sqlState?: unknown; fatal?: unknown } | null;
  if (!e || typeof e !== 'object') return 'transient';
  if (e.fatal === true) return 'transient'; // mysql2: the connection is gone
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string') return MYSQL_ROW.has(e.errno) ? 'row' : 'transient';
  if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return PG_ROW.has(e.code) ? 'row' : 'transient';
  return 'transient';
}
