import { settlesBy } from '../../core/settle';
import { WriteProgress } from '../kit/write-progress';
import type { SqlConnection, SqlDriver } from './sql-clients';
import { withSqlCode } from './sql-errors';

/**
 * Runs `fn` on a connection of the driver's pool, given back after (or destroyed, when the signal cut
 * a statement short). Waits for the connection only until the signal aborts. A connection that cannot
 * be had fails with the code a statement failing that way would carry (`withSqlCode`).
 */
export async function withConnection<T>(driver: SqlDriver, fn: (connection: SqlConnection) => Promise<T>, signal?: AbortSignal): Promise<T> {
  const pending = driver.acquire();
  if (signal && !(await new WriteProgress(0).until(pending, signal))) {
    pending.then((c) => c.release(), () => undefined); // it came too late: straight back to the pool
    throw signal.reason;
  }
  const connection = await pending.catch((error: unknown) => {
    throw withSqlCode(error);
  });
  const guarded = new GuardedConnection(connection);
  try {
    return await fn(guarded);
  } finally {
    guarded.release();
  }
}

/** A connection that is given back once, or destroyed instead when a statement on it was cut short. */
class GuardedConnection implements SqlConnection {
  private done = false;
  constructor(private readonly connection: SqlConnection) {}
  query(statement: Parameters<SqlConnection['query']>[0]) {
    return this.connection.query(statement);
  }
  release(): void {
    if (this.done) return;
    this.done = true;
    this.connection.release();
  }
  destroy(reason: unknown): void {
    if (this.done) return;
    this.done = true;
    this.connection.destroy(reason);
  }
}

/** Runs a statement until the signal aborts; then destroys the connection (which ends the statement) and throws the signal's reason. */
export async function run(connection: SqlConnection, statement: Parameters<SqlConnection['query']>[0], progress: WriteProgress, signal: AbortSignal) {
  const work = connection.query(statement);
  if (await progress.until(work, signal)) return work;
  connection.destroy(signal.reason);
  throw signal.reason;
}

/**
 * Runs `fn` on a connection of the driver's pool, the whole of it (waiting for the connection, every
 * statement) bounded by `timeoutMs`: past it the call fails with `timedOut()`, and a statement cut
 * short destroys its connection (the pool opens a fresh one) instead of holding it until a database
 * that took the connection and never answers (a black hole, a hung server) answers again — `pg` has
 * no connection or query timeout by default.
 */
export async function withinTime<T>(driver: SqlDriver, timeoutMs: number, timedOut: () => Error, fn: (connection: SqlConnection) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  // not unref'd: a call waiting on a pool with no socket of its own must not let the process exit
  const timer = setTimeout(() => controller.abort(timedOut()), timeoutMs);
  const progress = new WriteProgress(0);
  try {
    return await withConnection(driver, (connection) => fn(new BoundedConnection(connection, progress, controller.signal)), controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `fn` at bootstrap within `timeoutMs` (see {@link withinTime}): a database that does not answer
 * fails the bootstrap with a message saying so, instead of holding it forever.
 */
export function atBootstrap<T>(driver: SqlDriver, timeoutMs: number, fn: (connection: SqlConnection) => Promise<T>): Promise<T> {
  return withinTime(driver, timeoutMs, () => new Error(`the database did not answer within ${timeoutMs} ms (bootstrapTimeoutMs)`), fn);
}

/** A connection whose statements end when `signal` aborts (see `run`). */
class BoundedConnection implements SqlConnection {
  constructor(
    private readonly connection: SqlConnection,
    private readonly progress: WriteProgress,
    private readonly signal: AbortSignal,
  ) {}
  query(statement: Parameters<SqlConnection['query']>[0]) {
    return run(this.connection, statement, this.progress, this.signal);
  }
  release(): void {
    this.connection.release();
  }
  destroy(reason: unknown): void {
    this.connection.destroy(reason);
  }
}

/** How long a failed bootstrap waits for a pool the library opened to close. */
const OWN_POOL_CLOSE_MS = 1000;

/** Closes a pool the library opened (from a connection string) after a failed bootstrap: its error ignored, not waited on past a second (its database may not answer). */
export async function closeAfterFailedBootstrap(close: (() => Promise<void>) | undefined): Promise<void> {
  await settlesBy(close?.().catch(() => undefined), Date.now() + OWN_POOL_CLOSE_MS);
}
