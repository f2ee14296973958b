import { Controller, Get, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { SqlSink } from 'nestjs-deferred-work/sql';
import pg from 'pg';
import { eventually } from '../support/eventually';
import { load, range, watchIdentity } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { PrivatePostgres } from '../support/private-postgres';

/**
 * SqlSink on its default options while its database restarts: a private PostgreSQL (never the machine's) is stopped for 2 s
 * mid-load and started again, on Express and Fastify. Every response is 2xx, the accounting identity
 * holds at every sample, and every row is in the table exactly once.
 */
failOnUnhandledRejection();
const server = new PrivatePostgres();
let table = 0;

beforeAll(async () => {
  await server.start();
}, 60_000);
afterAll(async () => {
  await server.dispose();
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

describe.each(platforms)('SqlSink, PostgreSQL restarted mid-load ($name)', (platform) => {
  it('150 requests, the server down 2 s after the 40th: every response 2xx, every row once, the identity exact throughout', async () => {
    const name = `dw_restart_${++table}`;
    const pool = new pg.Pool({ connectionString: server.url, max: 5, connectionTimeoutMillis: 1000 });
    pool.on('error', () => undefined); // idle clients closed by the shutdown (an app logs these)
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new SqlSink({ client: 'DB', table: name, createTable: true })],
        }),
      ],
      controllers: [RowsController],
      providers: [{ provide: 'DB', useValue: pool }],
    });
    try {
      const work = started.app.get(DeferredWork);
      const marks = range(0, 150).map((i) => `${platform.name}-${i}`);
      const steps: Promise<void>[] = [];
      const statuses = load(started.url, marks.map((m) => `/rows/${m}`), 5, (done) => {
        if (done === 40) steps.push(server.stop().then(() => new Promise((resolve) => setTimeout(resolve, 2000))).then(() => server.start()));
      });
      const { broken, checks } = await watchIdentity(work, statuses, 'sql');
      await Promise.all(steps);
      expect((await statuses).every((s) => s === 200)).toBe(true);
      expect(broken).toEqual([]);
      expect(checks).toBeGreaterThan(0);
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 150, delivered: 150, pending: 0, deadLettered: 0 }), 30_000);
      expect(work.stats().sinks.sql.failedWrites).toBeGreaterThan(0); // the outage was felt
      const { rows } = await pool.query(`SELECT count(*)::int AS n, count(DISTINCT payload->'fields'->>'mark')::int AS marks FROM ${name}`);
      expect(rows[0]).toEqual({ n: 150, marks: 150 });
    } finally {
      await started.close();
      await pool.end();
    }
  }, 90_000);
});
