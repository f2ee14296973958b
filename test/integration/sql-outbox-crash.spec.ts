import pg from 'pg';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { compileFixture, NodeApp } from '../support/node-app';
import { PG_URL, requirePostgres } from '../support/postgres';

/**
 * The transactional outbox across kill -9, as real processes (test/fixtures/sql-outbox-crash.app.ts,
 * PostgreSQL, an HTTP receiver as the sink's destination): a process killed after its transactions
 * committed and before its relay read them, and one killed while its relay held claimed rows whose
 * items its sink had not delivered. The next process delivers every committed order's item — at
 * least once, each with the id its transaction wrote.
 */
const RUN = `dw_obcrash_${process.pid}`;
const admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
let fixture = '';
let n = 0;
const apps: NodeApp[] = [];

beforeAll(async () => {
  await requirePostgres();
  fixture = compileFixture('sql-outbox-crash.app');
});
afterAll(async () => {
  for (const app of apps) app.kill();
  await admin.end();
});

async function tables(): Promise<string> {
  const table = `${RUN}_${++n}`;
  await admin.query(`DROP TABLE IF EXISTS ${table}; DROP TABLE IF EXISTS ${table}_orders`);
  await admin.query(`CREATE TABLE ${table}_orders (n integer PRIMARY KEY)`);
  return table;
}

async function start(env: Record<string, string>): Promise<{ app: NodeApp; url: string }> {
  const app = new NodeApp(fixture, { PG_URL, ...env });
  apps.push(app);
  const { port } = await app.json<{ port: number }>('port', 30_000);
  return { app, url: `http://127.0.0.1:${port}` };
}

async function order(url: string, i: number): Promise<string> {
  const res = await fetch(`${url}/orders/${i}`, { method: 'POST' });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/** The ids the receiver got, each once, and how many deliveries in all. */
function received(receiver: HttpReceiver): { ids: Set<string>; deliveries: number } {
  const items = receiver.requests.filter((r) => r.reply !== 'hang' && typeof r.reply === 'object' && r.reply.status < 300).flatMap((r) => r.items as Array<{ id: string }>);
  return { ids: new Set(items.map((item) => item.id)), deliveries: items.length };
}

describe('DeferredOutbox across kill -9 (PostgreSQL)', () => {
  it('killed between commit and relay: the next process relays every committed row', async () => {
    const table = await tables();
    const receiver = await HttpReceiver.start();
    try {
      const first = await start({ TABLE: table, RELAY: '0', RECEIVER_URL: `http://127.0.0.1:${receiver.port}/items` });
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push(await order(first.url, i));
      first.app.kill();
      await first.app.exited;
      expect(Number((await admin.query(`SELECT COUNT(*) AS c FROM ${table}_orders`)).rows[0].c)).toBe(40);
      expect(Number((await admin.query(`SELECT COUNT(*) AS c FROM ${table}`)).rows[0].c)).toBe(40);
      expect(receiver.requests).toHaveLength(0);

      const second = await start({ TABLE: table, RELAY: '1', RECEIVER_URL: `http://127.0.0.1:${receiver.port}/items` });
      await eventually(() => expect([...received(receiver).ids].sort()).toEqual([...ids].sort()), 15_000, 50);
      await eventually(async () => expect((await admin.query(`SELECT id FROM ${table}`)).rows).toEqual([]), 5000, 50);
      second.app.kill();
    } finally {
      await receiver.close();
      await admin.query(`DROP TABLE IF EXISTS ${table}; DROP TABLE IF EXISTS ${table}_orders`);
    }
  }, 60_000);

  it('killed while its relay held claimed rows undelivered: after their lease another process delivers them', async () => {
    const table = await tables();
    let up = false; // the receiver answers 503 until the test lets it through
    const deliveredAt = new Map<string, number>(); // item id → wall-clock ms of its first 200
    const receiver = await HttpReceiver.start((request) => {
      if (!up) return { status: 503 };
      for (const item of request.items as Array<{ id: string }>) if (!deliveredAt.has(item.id)) deliveredAt.set(item.id, Date.now());
      return { status: 200 };
    });
    try {
      const first = await start({ TABLE: table, RELAY: '1', LEASE_MS: '3000', RECEIVER_URL: `http://127.0.0.1:${receiver.port}/items` });
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) ids.push(await order(first.url, i));
      // Every row claimed by the first process's relay, its items retried against the 503s.
      await eventually(async () => expect(Number((await admin.query(`SELECT COUNT(*) AS c FROM ${table} WHERE claimed_until > now()`)).rows[0].c)).toBe(30), 10_000, 50);
      expect(receiver.requests.length).toBeGreaterThan(0);
      const claims = (await admin.query(`SELECT id, claimed_until FROM ${table}`)).rows.map((r) => [r.id as string, new Date(r.claimed_until as string).getTime()] as const);
      first.app.kill();
      await first.app.exited;
      up = true;

      const second = await start({ TABLE: table, RELAY: '1', LEASE_MS: '3000', RECEIVER_URL: `http://127.0.0.1:${receiver.port}/items` });
      await eventually(() => expect([...received(receiver).ids].sort()).toEqual([...ids].sort()), 20_000, 50);
      // Not before the dead process's claims ran out: nothing is taken from a live claim (the first
      // process renewed them until it was killed).
      const early = claims.filter(([id, until]) => deliveredAt.get(id)! < until - 50).map(([id, until]) => `${id}: ${until - deliveredAt.get(id)!} ms early`);
      expect(early).toEqual([]);
      await eventually(async () => expect((await admin.query(`SELECT id FROM ${table}`)).rows).toEqual([]), 5000, 50);
      second.app.kill();
    } finally {
      await receiver.close();
      await admin.query(`DROP TABLE IF EXISTS ${table}; DROP TABLE IF EXISTS ${table}_orders`);
    }
  }, 60_000);
});
