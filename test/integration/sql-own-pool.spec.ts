import { Controller, Get, Logger, Param } from '@nestjs/common';
import { jest } from '@jest/globals';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { SqlSink } from 'nestjs-deferred-work/sql';
import pg from 'pg';
import { eventually } from '../support/eventually';
import { load } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { PG_URL, requirePostgres } from '../support/postgres';

/**
 * SqlSink given a connection string opens a pool of its own. When the database ends that pool's idle
 * connections (a restart, a fail-over, an administrator), pg emits 'error' on the pool: without a
 * listener that ends the process ("Unhandled 'error' event … BoundPool"). The sink listens: the app
 * goes on, says so once in a warning, and the next row is written through a new connection.
 */
failOnUnhandledRejection();
const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
admin.on('error', () => undefined);
let n = 0;

beforeAll(async () => {
  await requirePostgres();
});
afterAll(async () => {
  await admin.end();
});

@Controller()
class RowsController {
  @Get('rows/:mark')
  @AfterResponse()
  rows(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'row', { mark });
    return { mark };
  }
}

describe.each(platforms)('SqlSink with a pool of its own, its idle connections ended by the database ($name)', (platform) => {
  it('the app goes on (no unheard error event), warns, and writes the next row through a new connection', async () => {
    const table = `dw_own_pool_${process.pid}_${++n}`;
    const appName = `dw-own-pool-${process.pid}-${n}`;
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${appName}`;
    const warnings = jest.spyOn(Logger.prototype, 'warn');
    const started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [new SqlSink({ client: url, table, createTable: true })] })],
      controllers: [RowsController],
    });
    const work = started.app.get(DeferredWork);
    try {
      expect(await load(started.url, ['/rows/before'], 1)).toEqual([200]);
      await eventually(async () => expect(work.stats().sinks.sql.delivered).toBe(1));
      const ended = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [appName]);
      expect(ended.rowCount).toBeGreaterThan(0);
      await eventually(async () => expect(warnings.mock.calls.map((c) => String(c[0])).some((m) => /its own pool lost an idle connection/.test(m))).toBe(true));
      expect(await load(started.url, ['/rows/after'], 1)).toEqual([200]);
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ delivered: 2, pending: 0, deadLettered: 0 }));
      const { rows } = await admin.query(`SELECT payload->'fields'->>'mark' AS mark FROM ${table} ORDER BY mark`);
      expect(rows.map((r: { mark: string }) => r.mark)).toEqual(['after', 'before']);
    } finally {
      warnings.mockRestore();
      await started.close();
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }, 30_000);
});
