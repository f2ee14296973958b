import { Controller, Get, Param } from '@nestjs/common';
import { createPool, type Pool } from 'mysql2';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { SqlSink } from 'nestjs-deferred-work/sql';
import { eventually } from '../support/eventually';
import { load, range, watchIdentity } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { PrivateMariaDb } from '../support/private-mariadb';

/**
 * SqlSink on its default options while its database restarts: a private MariaDB (never the machine's) is stopped for 2 s
 * mid-load and started again, written through the app's mysql2 pool, on Express and Fastify. Every
 * response is 2xx, the accounting identity holds at every sample, every row is in the table exactly
 * once, and the pool is whole afterwards (the connections the shutdown closed were replaced).
 */
failOnUnhandledRejection();
const server = new PrivateMariaDb();
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

const query = (pool: Pool, text: string) =>
  new Promise<Array<Record<string, unknown>>>((resolve, reject) =>
    pool.query(text, (error, rows) => (error ? reject(error) : resolve(rows as Array<Record<string, unknown>>))),
  );

describe.each(platforms)('SqlSink, MariaDB restarted mid-load ($name)', (platform) => {
  it('150 requests, the server down 2 s after the 40th: every response 2xx, every row once, the identity exact throughout, the pool whole after', async () => {
    const name = `dw_restart_my_${++table}`;
    const pool = createPool({ uri: server.url, connectionLimit: 5, connectTimeout: 1000 });
    pool.on('connection', (connection) => connection.on('error', () => undefined)); // idle connections closed by the shutdown
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new SqlSink({ client: 'DB', table: name, createTable: true })],
        }),
      ],
      controllers: [RowsController],
      providers: [{ provide: 'DB', useValue: pool }],
    });
    let sampler: NodeJS.Timeout | undefined;
    try {
      const work = started.app.get(DeferredWork);
      // the app's own queries hold connections of the pool before the outage, as handlers would
      await Promise.all(range(0, 5).map(() => query(pool, 'SELECT SLEEP(0.05)')));
      const marks = range(0, 150).map((i) => `${platform.name}-${i}`);
      const steps: Promise<void>[] = [];
      const errors = new Set<string>(); // what the sink saw during the outage (each retried: none dead-lettered)
      sampler = setInterval(() => {
        const { lastError, lastErrorCode } = work.stats().sinks.sql;
        if (lastError) errors.add(`${lastErrorCode ?? '-'}: ${lastError}`);
      }, 5);
      const statuses = load(started.url, marks.map((m) => `/rows/${m}`), 5, (done) => {
        if (done === 40) steps.push(server.stop().then(() => new Promise((resolve) => setTimeout(resolve, 2000))).then(() => server.start()));
      });
      const { broken, checks } = await watchIdentity(work, statuses, 'sql');
      await Promise.all(steps);
      clearInterval(sampler);
      expect((await statuses).every((s) => s === 200)).toBe(true);
      expect(broken).toEqual([]);
      expect(checks).toBeGreaterThan(0);
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 150, delivered: 150, pending: 0, dropped: 0, deadLettered: 0 }), 30_000);
      expect(work.stats().sinks.sql.failedWrites).toBeGreaterThan(0); // the outage was felt

      expect(await query(pool, `SELECT id, COUNT(*) AS n FROM ${name} GROUP BY id HAVING COUNT(*) > 1`)).toEqual([]);
      const [counts] = await query(pool, `SELECT COUNT(*) AS n, COUNT(DISTINCT JSON_UNQUOTE(JSON_EXTRACT(payload, '$.fields.mark'))) AS marks FROM ${name}`);
      expect({ n: Number(counts.n), marks: Number(counts.marks) }).toEqual({ n: 150, marks: 150 });
      const stored = await query(pool, `SELECT JSON_UNQUOTE(JSON_EXTRACT(payload, '$.fields.mark')) AS mark FROM ${name}`);
      expect(new Set(stored.map((r) => r.mark))).toEqual(new Set(marks));

      // The pool is whole: all five connections at once answer, from the restarted server, and the sink writes on.
      const ids = await Promise.all(range(0, 5).map(() => query(pool, 'SELECT CONNECTION_ID() AS id, SLEEP(0.05) AS s')));
      expect(new Set(ids.map(([row]) => row.id)).size).toBe(5);
      await load(started.url, range(150, 170).map((i) => `/rows/${platform.name}-${i}`), 5);
      await eventually(async () => expect(work.stats().sinks.sql).toMatchObject({ accepted: 170, delivered: 170, pending: 0, deadLettered: 0 }), 10_000);
      const [after] = await query(pool, `SELECT COUNT(*) AS n FROM ${name}`);
      expect(Number(after.n)).toBe(170);
      process.stdout.write(`[sql-restart mariadb ${platform.name}] 150 rows through a restart, ${work.stats().sinks.sql.failedWrites} failed writes, ${work.stats().sinks.sql.duplicates} duplicates; errors seen: ${[...errors].join(' | ')}\n`);
    } finally {
      clearInterval(sampler);
      await started.close();
      await new Promise<void>((resolve) => pool.end(() => resolve()));
    }
  }, 90_000);
});
