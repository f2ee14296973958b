import type { SqlDialect } from '../sql-sink.options';

/** Runs one statement through the caller's transaction (`?` or `$n` placeholders, as it says). */
export interface TxRunner {
  /** How the statement's placeholders are written for this handle. */
  readonly placeholders: 'dollar' | 'question';
  /** What messages call it, e.g. `a TypeORM EntityManager`. */
  readonly what: string;
  run(text: string, values: unknown[]): Promise<unknown>;
}

type Fn = (...args: never[]) => unknown;
const isObject = (value: unknown): value is Record<string, unknown> => (typeof value === 'object' || typeof value === 'function') && value !== null;
const has = (value: Record<string, unknown>, name: string): boolean => typeof value[name] === 'function';

/** A Knex instance or transaction (a function with `raw` and a `client`). */
function isKnex(value: unknown): boolean {
  const knex = value as { raw?: unknown; client?: unknown };
  return typeof value === 'function' && typeof knex.raw === 'function' && isObject(knex.client);
}

/** Thrown for a handle that is no transaction, or none this library can write through. */
export class OutboxTransactionError extends Error {
  override readonly name = 'OutboxTransactionError';
}

const notInTransaction = (what: string, how: string) =>
  new OutboxTransactionError(
    `DeferredOutbox: ${what} is not in a transaction, so the outbox row would be written whether or not your business write commits. ${how}`,
  );

/**
 * Reads the caller's transaction handle: a TypeORM `EntityManager` (of `dataSource.transaction(…)` or
 * `TransactionHost.tx` of `@nestjs-cls/transactional`'s TypeORM adapter) or `QueryRunner`, a Knex
 * transaction (also `TransactionHost.tx` of its Knex adapter), a `pg` client or a `mysql2`
 * connection on which the caller began a transaction.
 */
export function txRunner(tx: unknown, dialect: SqlDialect): TxRunner {
  const dollar = dialect === 'postgres' ? 'dollar' : 'question';
  if (!isObject(tx)) {
    throw new OutboxTransactionError(
      `DeferredOutbox: the first argument must be your transaction (a TypeORM EntityManager, a Knex transaction, a pg client or a mysql2 connection), got ${tx === null ? 'null' : typeof tx}.`,
    );
  }
  const symbol = tx['@instanceof'];
  if (symbol === Symbol.for('EntityManager')) {
    const runner = tx.queryRunner as { isTransactionActive?: boolean } | undefined;
    if (!runner?.isTransactionActive) {
      throw notInTransaction('the TypeORM EntityManager', 'Pass the manager that dataSource.transaction(async (manager) => …) gives you (or TransactionHost.tx inside @Transactional()), not dataSource.manager.');
    }
    return { placeholders: dollar, what: 'a TypeORM EntityManager', run: (text, values) => (tx.query as Fn as (q: string, p: unknown[]) => Promise<unknown>)(text, values) };
  }
  if (symbol === Symbol.for('QueryRunner') || (has(tx, 'query') && typeof tx.isTransactionActive === 'boolean' && isObject(tx.manager))) {
    if (!tx.isTransactionActive) throw notInTransaction('the TypeORM QueryRunner', 'Call queryRunner.startTransaction() first.');
    return { placeholders: dollar, what: 'a TypeORM QueryRunner', run: (text, values) => (tx.query as Fn as (q: string, p: unknown[]) => Promise<unknown>)(text, values) };
  }
  if (isKnex(tx)) {
    if (tx.isTransaction !== true) {
      throw notInTransaction('the Knex instance', 'Pass the trx of knex.transaction(async (trx) => …) (or TransactionHost.tx inside @Transactional()).');
    }
    const raw = tx.raw as Fn as (sql: string, bindings: unknown[]) => PromiseLike<unknown>;
    return { placeholders: 'question', what: 'a Knex transaction', run: async (text, values) => await raw.call(tx, text, values) };
  }
  if (has(tx, '$executeRawUnsafe')) {
    throw new OutboxTransactionError(
      'DeferredOutbox: Prisma transactions are not supported yet. Write the outbox row with a driver the outbox takes (TypeORM, Knex, pg, mysql2), or see docs/sinks/sql.md for the Prisma workaround.',
    );
  }
  if (has(tx, 'query') && has(tx, 'escapeIdentifier')) {
    // A pg Client or PoolClient: node-postgres does not say whether a transaction is open.
    const query = tx.query as Fn as (config: { text: string; values: unknown[] }) => Promise<unknown>;
    return { placeholders: 'dollar', what: 'a pg client', run: (text, values) => query.call(tx, { text, values }) };
  }
  if (has(tx, 'query') && has(tx, 'beginTransaction')) {
    // A mysql2 connection: its promise face, or the callback one (whose promise() wraps it).
    const promised = has(tx, 'promise') ? (tx.promise as Fn as () => Record<string, unknown>).call(tx) : tx;
    const query = promised.query as Fn as (sql: string, values: unknown[]) => Promise<unknown>;
    return { placeholders: 'question', what: 'a mysql2 connection', run: (text, values) => query.call(promised, text, values) };
  }
  throw new OutboxTransactionError(
    'DeferredOutbox: the first argument is not a transaction it can write through. Pass a TypeORM EntityManager or QueryRunner in a transaction, a Knex transaction, a pg client or a mysql2 connection that began one.',
  );
}
