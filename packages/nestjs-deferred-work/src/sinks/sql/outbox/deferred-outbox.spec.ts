import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SinkConfigError } from '../../kit/sink-config.error';
import { DeferredOutbox } from './deferred-outbox';
import { DEFERRED_OUTBOX_DEFAULTS } from './outbox.options';
import { txRunner } from './outbox-tx';
import type { DeferredIntake } from '../../../core/intake.interface';

const intake = { shutdownTimeoutMs: 5000 } as DeferredIntake;
const moduleRef = {} as never;
const outbox = (options: unknown) => new DeferredOutbox(options as never, moduleRef, intake);

describe('DeferredOutbox options', () => {
  it('needs a client, and says how to give one', () => {
    expect(() => outbox({})).toThrow(SinkConfigError);
    expect(() => outbox({})).toThrow(/option "client" is required.*getDataSourceToken/);
  });

  it('refuses a table name that is not one, flags that are not booleans, numbers out of range', () => {
    expect(() => outbox({ client: 'DB', table: 'drop table x;' })).toThrow(/"table" is not a table name/);
    expect(() => outbox({ client: 'DB', relay: 'yes' })).toThrow(/"relay" must be true or false/);
    expect(() => outbox({ client: 'DB', leaseMs: 100 })).toThrow(/leaseMs/);
    expect(() => outbox({ client: 'DB', batchSize: 0 })).toThrow(/batchSize/);
  });

  it('without DeferredWorkModule says what is missing', () => {
    expect(() => new DeferredOutbox({ client: 'DB' }, moduleRef, undefined)).toThrow(/needs DeferredWorkModule.forRoot\(\)/);
  });

  it('before bootstrap, add() says when it can be called', async () => {
    await expect(outbox({ client: 'DB' }).job({}, 'q', 'n', {})).rejects.toThrow(/not ready.*app.init\(\) or app.listen\(\)/);
  });

  it('docs/sinks/sql.md lists every option with the default the code has', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../../../../../docs/sinks/sql.md'), 'utf8');
    const start = doc.indexOf('## The transactional outbox');
    const section = doc.slice(start, doc.indexOf('### The outbox table', start));
    const rows = Object.fromEntries([...section.matchAll(/^\| `(\w+)` \| ([^|]+) \|/gm)].map((m) => [m[1], m[2].trim()]));
    const d = DEFERRED_OUTBOX_DEFAULTS;
    expect(rows).toEqual({
      client: '(required)',
      table: `\`'${d.table}'\``,
      createTable: `\`${d.createTable}\``,
      relay: `\`${d.relay}\``,
      batchSize: `\`${d.batchSize}\``,
      pollIntervalMs: `\`${d.pollIntervalMs}\``,
      leaseMs: `\`${d.leaseMs}\``,
      bootstrapTimeoutMs: `\`${d.bootstrapTimeoutMs}\``,
    });
  });
});

describe('the transaction handles DeferredOutbox writes through', () => {
  const query = async () => [];
  it('a TypeORM EntityManager in a transaction, with the dialect\'s placeholders; one outside is refused', () => {
    const manager = { '@instanceof': Symbol.for('EntityManager'), query, queryRunner: { isTransactionActive: true } };
    expect(txRunner(manager, 'postgres')).toMatchObject({ placeholders: 'dollar', what: 'a TypeORM EntityManager' });
    expect(txRunner(manager, 'mysql')).toMatchObject({ placeholders: 'question' });
    expect(() => txRunner({ ...manager, queryRunner: undefined }, 'postgres')).toThrow(/not in a transaction.*dataSource.transaction/);
  });

  it('a Knex transaction (always ? placeholders); Knex itself is refused', () => {
    const trx = Object.assign(() => undefined, { raw: query, client: {}, isTransaction: true });
    expect(txRunner(trx, 'postgres')).toMatchObject({ placeholders: 'question', what: 'a Knex transaction' });
    expect(() => txRunner(Object.assign(() => undefined, { raw: query, client: {} }), 'postgres')).toThrow(/Knex instance is not in a transaction/);
  });

  it('a pg client and a mysql2 connection; Prisma and anything else are refused with what to pass', () => {
    expect(txRunner({ query, escapeIdentifier: () => '' }, 'postgres')).toMatchObject({ what: 'a pg client', placeholders: 'dollar' });
    expect(txRunner({ query, beginTransaction: () => undefined }, 'mysql')).toMatchObject({ what: 'a mysql2 connection', placeholders: 'question' });
    expect(() => txRunner({ $executeRawUnsafe: query }, 'postgres')).toThrow(/Prisma transactions are not supported/);
    expect(() => txRunner({}, 'postgres')).toThrow(/not a transaction it can write through/);
    expect(() => txRunner(undefined, 'postgres')).toThrow(/must be your transaction/);
  });
});
