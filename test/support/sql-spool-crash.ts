import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection, type Connection } from 'mysql2/promise';
import type { DeferredStats, SinkSpoolStats, SinkStats } from 'nestjs-deferred-work';
import pg from 'pg';
import { eventually } from './eventually';
import { load, range } from './load';
import { MYSQL_URL, requireMariaDb } from './mariadb';
import { compileFixture, NodeApp } from './node-app';
import { platforms } from './platforms';
import { PG_URL, requirePostgres } from './postgres';
import { appendAsRequeue, readSpool as readSpoolFiles } from './spool-files';
import { TcpProxy } from './tcp-proxy';

/**
 * SqlSink with its disk spool on, as real processes, on Express and Fastify, into the machine's
 * PostgreSQL or MariaDB (a spec file per database: test/integration/sql-spool-crash*.spec.ts): a
 * fixture app (test/fixtures/sql-spool-crash.app.ts) is killed with SIGKILL and a new process on the
 * same spool directory writes what the first one left. The table keeps every accepted row once: ids are
 * its primary key, and a row the table already has (written before the crash, its confirmation lost
 * with the process) is skipped and counted as a duplicate.
 * - The database unreachable for the first process (its link, a TCP proxy, cut after the bootstrap):
 *   every request 2xx, every item spooled and fsynced, none written; after kill -9 the next process
 *   writes them all, once, 15 of them already in the table (the crash window) counted as duplicates.
 * - Killed while rows are being written (the database up, requests arriving, an insert of the sink
 *   waiting on a table lock the test holds and lets go after the kill, so that it may commit rows the
 *   dead process never confirmed): every row whose request had its 2xx well before the kill is in the
 *   table after the restart, no item twice, and the rows the replay added are exactly the replayed
 *   items the table did not have (the others counted as duplicates).
 */

/** The group commit's interval in the fixture; "synced" is waited for as a few of them. */
const SYNC_MS = 100;
const RUN = `dw_sql_spool_${process.pid}_${Date.now().toString(36)}`;
/** An item whose request had its 2xx at least this long before the SIGKILL must survive it. */
const WELL_BEFORE_MS = 500;
/** How long the load runs before the kill (at least). */
const LIVE_LOAD_MS = 1500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let fixture: string;
const apps: NodeApp[] = [];
const dirs: string[] = [];
const proxies: TcpProxy[] = [];
const tables: Array<() => Promise<unknown>> = [];

/** A job item as the spool holds it (its JSON). */
interface SpooledItem {
  id: string;
  kind: 'job';
  queue: string;
  name: string;
  data: { n: number };
  createdAt: number;
}

/** A database the fixture writes to: its URL, and the test's own connection to it. */
interface Database {
  name: 'postgres' | 'mariadb';
  url: string;
  open(): Promise<void>;
  close(): Promise<void>;
  query(text: string, values?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** The job number a row holds (in the default table's `payload`). */
  n: string;
  placeholders(count: number): string;
  /** Takes a lock on the table that holds the sink's inserts (not reads) until `unlock()`. */
  lock(table: string): Promise<void>;
  unlock(): Promise<void>;
}

function postgres(): Database {
  let client: pg.Client | undefined;
  return {
    name: 'postgres',
    url: PG_URL,
    async open() {
      await requirePostgres();
      client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
    },
    close: async () => void (await client?.end()),
    query: async (text, values) => (await client!.query(text, values)).rows,
    n: `(payload->'data'->>'n')::int`,
    placeholders: (count) => range(1, count + 1).map((i) => `$${i}`).join(', '),
    async lock(table) {
      await client!.query('BEGIN');
      await client!.query(`LOCK TABLE ${table} IN SHARE MODE`);
    },
    unlock: async () => void (await client!.query('COMMIT')),
  };
}

function mariadb(): Database {
  let connection: Connection | undefined;
  return {
    name: 'mariadb',
    url: MYSQL_URL,
    async open() {
      await requireMariaDb();
      connection = await createConnection({ uri: MYSQL_URL });
    },
    close: async () => void (await connection?.end()),
    query: async (text, values) => (await connection!.query(text, values))[0] as Array<Record<string, unknown>>,
    n: `CAST(JSON_UNQUOTE(JSON_EXTRACT(payload, '$.data.n')) AS SIGNED)`,
    placeholders: (count) => range(0, count).map(() => '?').join(', '),
    lock: async (table) => void (await connection!.query(`LOCK TABLES ${table} READ`)),
    unlock: async () => void (await connection!.query('UNLOCK TABLES')),
  };
}

/** `url` with another port (the proxy's). */
const atPort = (url: string, port: number) => {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
};

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dw-sql-spool-'));
  dirs.push(dir);
  return dir;
}

function newTable(db: Database, label: string): string {
  const table = `${RUN}_${db.name}_${label}`;
  tables.push(() => db.query(`DROP TABLE IF EXISTS ${table}`));
  return table;
}

/** The table's rows: each id and its job number. */
async function rowsOf(db: Database, table: string): Promise<Array<{ id: string; n: number }>> {
  return (await db.query(`SELECT id, ${db.n} AS n FROM ${table}`)).map((r) => ({ id: String(r.id), n: Number(r.n) }));
}

/** Ids the table holds more than once (never: the id is its primary key). */
const idsTwice = (db: Database, table: string) => db.query(`SELECT id, COUNT(*) AS c FROM ${table} GROUP BY id HAVING COUNT(*) > 1`);

/** Writes the item's row as the sink would (the default table's columns), straight into the table. */
async function insertAsSink(db: Database, table: string, item: SpooledItem): Promise<void> {
  await db.query(`INSERT INTO ${table} (id, kind, name, payload, created_at) VALUES (${db.placeholders(5)})`, [
    item.id,
    item.kind,
    item.queue,
    JSON.stringify({ name: item.name, data: item.data }),
    new Date(item.createdAt),
  ]);
}

const readSpool = (dir: string) => readSpoolFiles<SpooledItem>(dir);

const sorted = (ns: Iterable<number>) => [...ns].sort((a, b) => a - b);

/** A running fixture app: its URL, its sink's stats, and kill -9. */
interface CrashApp {
  process: NodeApp;
  url: string;
  sink(): Promise<SinkStats & { spool: SinkSpoolStats }>;
  kill9(): Promise<void>;
}

async function startApp(env: Record<string, string>): Promise<CrashApp> {
  const child = new NodeApp(fixture, { SYNC_INTERVAL_MS: String(SYNC_MS), ...env });
  apps.push(child);
  const { port } = await child.json<{ port: number }>('port', 20_000);
  const url = `http://127.0.0.1:${port}`;
  return {
    process: child,
    url,
    sink: async () => ((await (await fetch(`${url}/stats`)).json()) as DeferredStats).sinks.sql as SinkStats & { spool: SinkSpoolStats },
    async kill9() {
      child.signal('SIGKILL');
      expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
    },
  };
}

/** Waits until the app's sink has nothing pending, in memory or in its spool; returns its stats. */
function drained(app: CrashApp, timeoutMs = 20_000) {
  return eventually(
    async () => {
      const sink = await app.sink();
      expect({ pending: sink.pending, spooled: sink.spool.pending }).toEqual({ pending: 0, spooled: 0 });
      return sink;
    },
    timeoutMs,
    50,
  );
}

/**
 * `clients` clients each sending `GET /job/<n>` after its previous response (n from a shared counter)
 * until `stop()`: when each 2xx arrived, and what failed.
 */
function liveLoad(url: string, clients: number) {
  const state = { started: 0, inFlight: 0, okAt: new Map<number, number>(), failed: [] as Array<{ n: number; at: number; status: number }> };
  let stopped = false;
  const deadline = performance.now() + 15_000;
  const client = async () => {
    while (!stopped && performance.now() < deadline) {
      const n = state.started++;
      state.inFlight++;
      try {
        const res = await fetch(`${url}/job/${n}`, { signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        if (res.status >= 200 && res.status < 300) state.okAt.set(n, performance.now());
        else state.failed.push({ n, at: performance.now(), status: res.status });
      } catch {
        state.failed.push({ n, at: performance.now(), status: 0 });
      } finally {
        state.inFlight--;
      }
    }
  };
  const done = Promise.all(Array.from({ length: clients }, client));
  return { state, done, stop: () => void (stopped = true) };
}

/** The kill -9 cases for SqlSink with its spool into `database`, on each adapter. */
export function describeSqlSpoolCrash(database: 'postgres' | 'mariadb'): void {
  const db = database === 'postgres' ? postgres() : mariadb();

  beforeAll(async () => {
    fixture = compileFixture('sql-spool-crash.app');
    await db.open(); // fails the file (never skips it) when the server is not there
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) {
      app.kill();
      await app.exited;
    }
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    for (const drop of tables.splice(0)) await drop().catch(() => undefined);
    await db.close();
  });

  describe.each(platforms.map((p) => p.name))(`SqlSink with its spool across SIGKILL, as real processes (%s, ${db.name})`, (adapter) => {
    it('rows spooled while the database is unreachable survive kill -9 and are written once by the next process (15 already there: duplicates)', async () => {
      const N = 120;
      const table = newTable(db, `${adapter}_down`);
      const proxy = new TcpProxy(Number(new URL(db.url).port));
      proxies.push(proxy);
      await proxy.listen();
      const spoolDir = tempDir();
      const env = { ADAPTER: adapter, DB_URL: atPort(db.url, proxy.port), TABLE: table, SPOOL_DIR: spoolDir };

      // The first process boots through the proxy (the sink reads its table), then loses the database.
      const first = await startApp(env);
      await proxy.stop();
      const statuses = await load(first.url, range(0, N).map((n) => `/job/${n}`), 10);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      await eventually(async () => expect((await first.sink()).accepted).toBe(N), 10_000, 20);
      await sleep(3 * SYNC_MS); // more than two group commits: on disk and fsynced
      // retried, never dead-lettered, while the database stays away
      await eventually(async () => expect((await first.sink()).failedWrites).toBeGreaterThan(5), 15_000, 50);
      const before = await first.sink();
      expect(before).toMatchObject({ accepted: N, delivered: 0, pending: N, dropped: 0, deadLettered: 0 });
      expect(before.spool).toMatchObject({ dir: spoolDir, pending: N, appended: N, acked: 0, replayed: 0, syncErrors: 0 });
      expect(before.spool.fsyncs).toBeGreaterThan(0);
      await first.kill9();

      expect(await rowsOf(db, table)).toEqual([]);
      // While the database is away, items that used up their attempts go to the back of the spool: a new
      // record, then the old one acked. A kill between the two leaves both (same id): some items may be
      // on disk twice. The test always adds that window for 10 items, as such a requeue would leave it.
      appendAsRequeue(spoolDir, readSpool(spoolDir).slice(40, 50));
      const spooled = readSpool(spoolDir);
      const doubled = spooled.length - new Set(spooled.map((item) => item.id)).size;
      expect(doubled).toBeGreaterThanOrEqual(10);
      expect(sorted(new Set(spooled.map((item) => item.data.n)))).toEqual(range(0, N));
      expect(spooled.every((item) => /^dw-[0-9a-f-]{36}$/.test(item.id))).toBe(true);

      // The crash window between a row's commit and its ack: 15 rows are in the table already.
      const firstOnes = [...new Map(spooled.map((item) => [item.id, item])).values()].slice(0, 15);
      for (const item of firstOnes) await insertAsSink(db, table, item);

      const second = await startApp({ ...env, DB_URL: db.url });
      const after = await drained(second);
      const records = spooled.length;
      expect(after).toMatchObject({ accepted: records, delivered: records, pending: 0, dropped: 0, deadLettered: 0, duplicates: 15 + doubled });
      expect(after.spool).toMatchObject({ replayed: records, pending: 0, onDiskOnly: 0, tornRecords: 0, unreadable: 0 });
      expect(second.process.output).toMatch(new RegExp(`Spool of sink "sql" \\(.*\\): ${records} item\\(s\\) left by a previous process`));

      const rows = await rowsOf(db, table);
      expect(rows.length).toBe(N);
      expect(sorted(rows.map((r) => r.n))).toEqual(range(0, N));
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set(spooled.map((item) => item.id)));
      expect(await idsTwice(db, table)).toEqual([]);
      process.stdout.write(
        `[sql-spool-crash ${adapter} ${db.name}] spooled ${before.spool.pending} (${before.failedWrites} failed writes before kill -9), ` +
          `replayed ${after.spool.replayed}, rows ${rows.length}, duplicates ${after.duplicates}\n`,
      );
    }, 45_000);

    it('kill -9 while rows are being written (an insert in progress): every row whose 2xx came well before the kill is in the table after the restart, none twice', async () => {
      const testStart = Date.now();
      const table = newTable(db, `${adapter}_live`);
      const spoolDir = tempDir();
      const env = { ADAPTER: adapter, DB_URL: db.url, TABLE: table, SPOOL_DIR: spoolDir };
      const first = await startApp(env);

      const startedAt = performance.now();
      const live = liveLoad(first.url, 8);
      const { state } = live;
      let locked = false;
      let sinkAtKill: SinkStats & { spool: SinkSpoolStats };
      try {
        // Rows are being written while requests arrive; then long enough, with 2xx well before now.
        await eventually(async () => expect((await first.sink()).delivered).toBeGreaterThan(20), 10_000, 10);
        await eventually(
          () => {
            const now = performance.now();
            expect(now - startedAt).toBeGreaterThanOrEqual(LIVE_LOAD_MS);
            expect([...state.okAt.values()].filter((at) => at <= now - WELL_BEFORE_MS).length).toBeGreaterThan(20);
          },
          10_000,
          5,
        );
        // A statement of the sink in progress at the kill: the test holds a lock on the table, so that the
        // sink's insert waits on it (as behind a migration or a long transaction), with requests in flight.
        await db.lock(table);
        locked = true;
        sinkAtKill = await eventually(
          async () => {
            const sink = await first.sink();
            expect(sink.inFlight).toBeGreaterThan(0);
            expect(state.inFlight).toBeGreaterThan(0);
            return sink;
          },
          10_000,
          5,
        );
      } catch (error) {
        live.stop();
        await live.done;
        if (locked) await db.unlock();
        throw error;
      }
      const inFlightAtKill = state.inFlight;
      const killAt = performance.now();
      first.process.signal('SIGKILL');
      live.stop(); // in the same turn: no request starts after the kill
      expect(await first.process.exited).toEqual({ code: null, signal: 'SIGKILL' });
      await live.done;
      // The insert the killed process left waiting may still commit once the lock is gone.
      await db.unlock();
      expect(state.failed.filter((f) => f.at < killAt || f.status !== 0)).toEqual([]); // every request before the kill had its 2xx
      const mustSurvive = sorted([...state.okAt].filter(([, at]) => at <= killAt - WELL_BEFORE_MS).map(([n]) => n));
      const late = [...state.okAt].filter(([, at]) => at > killAt - WELL_BEFORE_MS).map(([n]) => n);

      // A statement the server had received may still commit after the kill: read the table once it has settled.
      await sleep(500);
      const atKill = await rowsOf(db, table);
      const spooled = readSpool(spoolDir);
      const spooledNs = new Set(spooled.map((item) => item.data.n));
      expect(spooledNs.size).toBe(spooled.length); // one record per item
      const writtenNs = new Set(atKill.map((r) => r.n));
      expect(mustSurvive.filter((n) => !writtenNs.has(n) && !spooledNs.has(n))).toEqual([]); // each in the table or on disk

      const second = await startApp(env);
      const after = await drained(second, 30_000);
      const replayed = after.spool.replayed;
      expect(replayed).toBe(spooled.length);
      expect(after).toMatchObject({ accepted: replayed, delivered: replayed, pending: 0, dropped: 0, deadLettered: 0 });
      expect(after.spool).toMatchObject({ pending: 0, onDiskOnly: 0, unreadable: 0 });

      const rows = await rowsOf(db, table);
      const ns = new Set(rows.map((r) => r.n));
      expect(ns.size).toBe(rows.length); // no item twice
      expect(await idsTwice(db, table)).toEqual([]);
      expect(mustSurvive.filter((n) => !ns.has(n))).toEqual([]); // every 2xx well before the kill
      expect([...ns].filter((n) => !(n >= 0 && n < state.started))).toEqual([]); // nothing never requested
      // The replay added exactly the replayed rows the table did not have; the others were skipped as duplicates.
      expect(rows.length).toBe(atKill.length + replayed - after.duplicates);
      expect(after.duplicates).toBe(spooled.filter((item) => writtenNs.has(item.data.n)).length);
      process.stdout.write(
        `[sql-spool-crash ${adapter} ${db.name} live kill] ${state.started} requests in ${Math.round(killAt - startedAt)} ms ` +
          `(${inFlightAtKill} in flight at the kill, ${sinkAtKill.inFlight} items in the sink's waiting statement), ${state.okAt.size} answered 2xx: ${mustSurvive.length} must survive, ` +
          `${late.filter((n) => ns.has(n)).length}/${late.length} late ones written; rows at the kill ${atKill.length}, on disk ${spooled.length}, ` +
          `replayed ${replayed} (${after.duplicates} already in the table), rows after ${rows.length}; test ${Date.now() - testStart} ms\n`,
      );
    }, 45_000);
  });
}
