import { errorCode } from '../../core/error-message';

/**
 * The code of a failure the library raises itself because the client is not connected (down,
 * connecting, reconnecting), so nothing was sent: POSIX `ENOTCONN`. Also given to a client's own
 * codeless "not connected" errors (ioredis `Connection is closed.`).
 */
export const NOT_CONNECTED = 'ENOTCONN';

/**
 * The code of a write, or the part of it not yet confirmed, that the library cut short at its
 * `writeTimeoutMs`: POSIX `ETIMEDOUT`.
 */
export const TIMED_OUT = 'ETIMEDOUT';

/**
 * The code of a failure the library raises itself when a client's connection broke while a write was
 * under way and the client's error says no more (NATS's flush on a dropped connection): POSIX `ECONNRESET`.
 */
export const CONNECTION_LOST = 'ECONNRESET';

/**
 * Errors that client libraries raise without a code when a connection is lost, refused or missing,
 * by their exact message, with the errno that says the same.
 */
const CODELESS: ReadonlyMap<string, string> = new Map([
  // pg: the server or the link closed the connection (while connecting, or mid-query)
  ['Connection terminated unexpectedly', 'ECONNRESET'],
  // pg: `connectionTimeoutMillis` passed while connecting; pg-pool: waiting for a client of a full pool
  ['Connection terminated due to connection timeout', 'ETIMEDOUT'],
  ['timeout exceeded when trying to connect', 'ETIMEDOUT'],
  // pg: a client that lost its connection, or was ended
  ['Client has encountered a connection error and is not queryable', NOT_CONNECTED],
  ['Client was closed and is not queryable', NOT_CONNECTED],
  // ioredis: a command on a connection that closed (or offline, with the offline queue off)
  ['Connection is closed.', NOT_CONNECTED],
  ["Stream isn't writeable and enableOfflineQueue options is false", NOT_CONNECTED],
  // mysql2: a command on a connection that closed
  ["Can't add new command when connection is in closed state", NOT_CONNECTED],
]);

/**
 * Timeouts by the error's name: the pipeline's for a write past `writeTimeoutMs` (the reason of the
 * write's signal), and `TimeoutError`, the platform's (`AbortSignal.timeout()`) and several clients'
 * (the AWS SDK, nats.js) name for one, which they raise without a code.
 */
const TIMEOUT_NAMES: ReadonlySet<string> = new Set(['WriteTimeoutError', 'TimeoutError']);

/**
 * The code of a failure: the one the error carries (`errorCode`: its own `code`, an `AggregateError`'s,
 * its `cause`'s, a Redis reply's prefix), else the errno of a client's codeless connection error (see
 * `CODELESS`) or `ETIMEDOUT` for a timeout (see `TIMEOUT_NAMES`) — looked for in the error and its causes.
 * `undefined` when none applies.
 */
export function failureCode(error: unknown): string | undefined {
  // first: a DOMException's numeric `code` (23 for a TimeoutError) is a legacy constant, not the failure's
  if (TIMEOUT_NAMES.has(String((error as { name?: unknown } | null)?.name))) return TIMED_OUT;
  const carried = errorCode(error);
  if (carried !== undefined) return carried;
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const { name, message, cause } = current as { name?: unknown; message?: unknown; cause?: unknown };
    if (typeof name === 'string' && TIMEOUT_NAMES.has(name)) return TIMED_OUT;
    const known = typeof message === 'string' ? CODELESS.get(message) : undefined;
    if (known !== undefined) return known;
    current = cause;
  }
  return undefined;
}
