import type { SinkAttachContext } from '../../core/sink.interface';
import { describeToken, resolveToken } from '../kit/app-client';
import { describeValue } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import { isSqlClient, openOwnPool, type SqlDriver, sqlDriverOf } from './sql-clients';

const CONNECTION_STRING = /^(postgres|postgresql|mysql|mariadb):\/\//i;

/**
 * The database client `SqlSink` writes through: the one among the app's providers (when `client` is
 * left out), `client` itself, the provider registered under the token `client`, or a pool of the
 * sink's own for a connection string (then with `closeOwnPool`, the sink's to close).
 */
export async function findSqlDriver(
  context: SinkAttachContext,
  client: unknown,
  label: string,
  maxConnections: number,
): Promise<{ driver: SqlDriver; closeOwnPool?: () => Promise<void> }> {
  const fail = (problem: string) =>
    new SinkConfigError(
      `${label}: ${problem}. Pass client: the injection token of the app's TypeORM DataSource (getDataSourceToken() of @nestjs/typeorm), Knex instance, pg Pool or mysql2 pool; ` +
        'the client itself; or a connection string (postgres://…, mysql://…) for a pool of the sink\'s own.',
      'client',
    );
  const driverOf = (value: unknown, where: string): SqlDriver | undefined => {
    try {
      return sqlDriverOf(value);
    } catch (error) {
      throw fail(`${where} is ${(error as Error).message}`);
    }
  };
  if (client === undefined) {
    const found = [...context.providers()].filter((p) => isSqlClient(p.instance));
    const distinct = [...new Map(found.map((p) => [p.instance, p])).values()];
    if (distinct.length === 1) return { driver: driverOf(distinct[0].instance, `the app's provider ${describeToken(distinct[0].token)}`)! };
    throw fail(distinct.length === 0 ? 'no SQL client found among the app\'s providers' : `the app has several SQL clients (${distinct.map((p) => describeToken(p.token)).join(', ')}), so which one to write to is not clear`);
  }
  if (typeof client === 'string' && CONNECTION_STRING.test(client)) {
    try {
      const own = await openOwnPool(client, maxConnections, label, (message) => context.warn(message));
      return { driver: own.driver, closeOwnPool: own.close };
    } catch (error) {
      throw fail(`cannot open a pool for the connection string: ${(error as Error).message}`);
    }
  }
  const direct = driverOf(client, 'the client given');
  if (direct) return { driver: direct };
  const resolved = resolveToken(context, client);
  if (resolved === undefined || resolved === null) throw fail(`nothing is registered as ${describeToken(client)}`);
  const driver = driverOf(resolved, `the provider ${describeToken(client)}`);
  if (!driver) throw fail(`the provider ${describeToken(client)} is not a SQL client the sink knows (${describeValue(resolved)})`);
  return { driver };
}
