import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { DeferredStats, JobItem, SinkSpoolStats, SinkStats } from 'nestjs-deferred-work';
import { redisStreamDefaultFields } from 'nestjs-deferred-work/redis-streams';
import { eventually } from '../support/eventually';
import { load, range } from '../support/load';
import { compileFixture, NodeApp } from '../support/node-app';
import { platforms } from '../support/platforms';
import { RedisServer } from '../support/redis-server';
import { appendAsRequeue, readSpool } from '../support/spool-files';

/**
 * RedisStreamSink with its disk spool on, as real processes, on Express and Fastify: a fixture app
 * (test/fixtures/redis-stream-process.app.ts) defers a job per request while its private Redis is
 * down, is killed with SIGKILL, and a new process on the same spool directory appends what the first
 * one left once Redis is back. Streams have no unique key: the copies the docs allow (an entry appended
 * before its confirmation was lost; an item on disk twice after a requeue cut short) are there, each
 * with the item's `id` field, and counted — every item is in the stream, by id, once or as such a copy.
 */
const SYNC_MS = 100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const redis = new RedisServer();
let fixture: string;
let admin: Redis;
const apps: NodeApp[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  fixture = compileFixture('redis-stream-process.app');
  await redis.start();
  admin = new Redis({ host: redis.host, port: redis.port, retryStrategy: () => 50 });
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    app.kill();
    await app.exited;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  admin.disconnect();
  await redis.dispose();
});

type SpooledJob = JobItem & { id: string; data: { n: number } };
type SpoolSink = SinkStats & { spool: SinkSpoolStats };

async function startApp(env: Record<string, string>) {
  const child = new NodeApp(fixture, { SYNC_INTERVAL_MS: String(SYNC_MS), ...env });
  apps.push(child);
  const { port } = await child.json<{ port: number }>('port', 20_000);
  const url = `http://127.0.0.1:${port}`;
  const sink = async () => ((await (await fetch(`${url}/stats`)).json()) as DeferredStats).sinks['redis-streams'] as SpoolSink;
  return { child, url, sink };
}

/** The stream's entries: each one's `id` field and the job number in its payload. */
async function entriesOf(stream: string): Promise<Array<{ id: string; n: number }>> {
  const entries = (await admin.xrange(stream, '-', '+')) as Array<[string, string[]]>;
  return entries.map(([, flat]) => {
    const fields = Object.fromEntries(range(0, flat.length / 2).map((i) => [flat[2 * i], flat[2 * i + 1]]));
    return { id: fields.id, n: (JSON.parse(fields.payload) as { data: { n: number } }).data.n };
  });
}

describe.each(platforms.map((p) => p.name))('RedisStreamSink with its spool across SIGKILL, as real processes (%s)', (adapter) => {
  it('entries spooled while Redis is down survive kill -9 and are appended by the next process; the only copies are the documented ones, same id', async () => {
    const N = 120;
    const stream = `dw-stream-spool-${adapter}-${process.pid}`;
    const spoolDir = mkdtempSync(join(tmpdir(), 'dw-stream-spool-'));
    dirs.push(spoolDir);
    const env = { ADAPTER: adapter, REDIS_PORT: String(redis.port), STREAM: stream, SPOOL_DIR: spoolDir };

    // The first process boots with Redis up, then loses it.
    const first = await startApp(env);
    await redis.stop();
    const statuses = await load(first.url, range(0, N).map((n) => `/job/${n}`), 10);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await eventually(async () => expect((await first.sink()).accepted).toBe(N), 10_000, 20);
    await sleep(3 * SYNC_MS); // more than two group commits: on disk and fsynced
    await eventually(async () => expect((await first.sink()).failedWrites).toBeGreaterThan(5), 15_000, 50); // retried while Redis is away
    const before = await first.sink();
    expect(before).toMatchObject({ accepted: N, delivered: 0, pending: N, dropped: 0, deadLettered: 0 });
    expect(before.spool).toMatchObject({ dir: spoolDir, pending: N, appended: N, acked: 0, syncErrors: 0 });
    first.child.signal('SIGKILL');
    expect(await first.child.exited).toEqual({ code: null, signal: 'SIGKILL' });

    // Items that used up their attempts go to the back of the spool (a new record, then the old one
    // acked): a kill between the two leaves both. The test always adds that window for 10 items.
    appendAsRequeue(spoolDir, readSpool<SpooledJob>(spoolDir).slice(40, 50));
    const spooled = readSpool<SpooledJob>(spoolDir);
    const doubled = spooled.length - new Set(spooled.map((item) => item.id)).size;
    expect(doubled).toBeGreaterThanOrEqual(10);
    expect([...new Set(spooled.map((item) => item.data.n))].sort((a, b) => a - b)).toEqual(range(0, N));

    // Redis back (empty: nothing was appended), and the window between an XADD and its confirmation:
    // 15 items already in the stream, appended as the sink appends them.
    await redis.start();
    await admin.ping();
    const firstOnes = [...new Map(spooled.map((item) => [item.id, item])).values()].slice(0, 15);
    for (const item of firstOnes) await admin.xadd(stream, '*', ...Object.entries(redisStreamDefaultFields(item)).flat());

    const second = await startApp(env);
    const records = spooled.length;
    const after = await eventually(
      async () => {
        const sink = await second.sink();
        expect({ pending: sink.pending, spooled: sink.spool.pending }).toEqual({ pending: 0, spooled: 0 });
        return sink;
      },
      20_000,
      50,
    );
    expect(after).toMatchObject({ accepted: records, delivered: records, pending: 0, dropped: 0, deadLettered: 0 });
    expect(after.spool).toMatchObject({ replayed: records, pending: 0, onDiskOnly: 0, tornRecords: 0, unreadable: 0 });
    expect(second.child.output).toMatch(new RegExp(`Spool of sink "redis-streams" \\(.*\\): ${records} item\\(s\\) left by a previous process`));

    const entries = await entriesOf(stream);
    const byId = new Map(entries.map((e) => [e.id, e.n]));
    expect(byId.size).toBe(N); // every item, by its id
    expect([...byId.values()].sort((a, b) => a - b)).toEqual(range(0, N));
    expect(new Set(byId.keys())).toEqual(new Set(spooled.map((item) => item.id)));
    // the copies: exactly the 15 appended before the "crash" and the items on disk twice
    expect(entries.length).toBe(records + 15);
    expect(entries.length - N).toBe(15 + doubled);
    for (const [id, n] of byId) expect(entries.filter((e) => e.id === id).every((e) => e.n === n)).toBe(true); // a copy is the same item
    process.stdout.write(
      `[redis-stream-spool-crash ${adapter}] spooled ${before.spool.pending} (${before.failedWrites} failed writes before kill -9), ` +
        `replayed ${after.spool.replayed} (${doubled} on disk twice), entries ${entries.length} for ${N} items (copies: 15 appended before the crash + ${doubled})\n`,
    );
  }, 60_000);
});
