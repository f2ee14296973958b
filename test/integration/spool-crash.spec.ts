import Bull from 'bull';
import { Queue as BullMqQueue } from 'bullmq';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeferredStats, SinkSpoolStats, SinkStats } from 'nestjs-deferred-work';
import { decodeAcks } from '../../packages/nestjs-deferred-work/src/spool/ack-entry';
import { encodeFrame, framePayload, scanFrames } from '../../packages/nestjs-deferred-work/src/spool/frame';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { load, range } from '../support/load';
import { compileFixture, NodeApp } from '../support/node-app';
import { platforms } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * The disk spool (issue 16) with real processes, on Express and Fastify: a fixture app
 * (test/fixtures/spool-crash.app.ts) accepts work while its sink is down, is killed with SIGKILL, and
 * a new process on the same spool directory delivers what the first one spooled — into a private
 * Redis (Bull, BullMQ: exactly once, by the stable item id as jobId) or an HTTP receiver (at least
 * once, duplicates told apart by the per-item id). Also: a torn tail written by the test, a full spool,
 * and a second process on a locked directory.
 */

/** The group commit's interval in the fixture; "synced" is waited for as a few of them. */
const SYNC_MS = 100;
const QUEUE = 'spool-crash';
const RUN = `dw-spool-${process.pid}-${Date.now().toString(36)}`;

const redis = new RedisServer({ persistent: true });
let fixture: string;
const apps: NodeApp[] = [];
const dirs: string[] = [];
const receivers: HttpReceiver[] = [];

beforeAll(async () => {
  fixture = compileFixture('spool-crash.app');
  await redis.start(); // fails the file (never skips it) when redis-server is missing
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    app.kill();
    await app.exited;
  }
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  if (!redis.running) await redis.start();
});
afterAll(() => redis.dispose());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dw-spool-crash-'));
  dirs.push(dir);
  return dir;
}

/** A running fixture app: its URL, pid and stats. */
interface CrashApp {
  process: NodeApp;
  url: string;
  pid: number;
  stats(): Promise<DeferredStats>;
  sink(): Promise<SinkStats & { spool: SinkSpoolStats }>;
  /** SIGKILL, and waits for the exit. */
  kill9(): Promise<void>;
}

async function startApp(env: Record<string, string>): Promise<CrashApp> {
  const child = new NodeApp(fixture, { SYNC_INTERVAL_MS: String(SYNC_MS), ...env });
  apps.push(child);
  const { port, pid } = await child.json<{ port: number; pid: number }>('port', 20_000);
  const url = `http://127.0.0.1:${port}`;
  const stats = async () => (await (await fetch(`${url}/stats`)).json()) as DeferredStats;
  return {
    process: child,
    url,
    pid,
    stats,
    sink: async () => (await stats()).sinks[env.SINK] as SinkStats & { spool: SinkSpoolStats },
    async kill9() {
      child.signal('SIGKILL');
      expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
    },
  };
}

/** `count` requests to the decorated route, 10 at a time, numbered from `from`: every one answers 200. */
async function defer(app: CrashApp, count: number, from = 0): Promise<void> {
  const statuses = await load(app.url, range(from, from + count).map((n) => `/job/${n}`), 10);
  expect(statuses.filter((status) => status !== 200)).toEqual([]);
}

/**
 * Waits until the app has accepted `accepted` items for the sink (appended to its spool), then for
 * more than two group commits: they are on disk and fsynced. Returns the sink's stats then.
 */
async function spooledAndSynced(app: CrashApp, accepted: number) {
  await eventually(async () => expect((await app.sink()).accepted).toBe(accepted), 10_000, 20);
  await sleep(3 * SYNC_MS);
  const sink = await app.sink();
  expect(sink.spool.fsyncs).toBeGreaterThan(0);
  expect(sink.spool.syncErrors).toBe(0);
  return sink;
}

/** Waits until the app's sink has nothing pending, in memory or in its spool; returns its stats. */
function drained(app: CrashApp, timeoutMs = 15_000) {
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

/** A job item as the spool holds it (its JSON). */
interface SpooledItem {
  id: string;
  kind: string;
  queue: string;
  name: string;
  data: { n: number; pad?: string };
}

/** The records pending in a sink's spool directory, read with the spool's own frame and ack formats. */
function readSpool(dir: string): Array<{ seq: number; item: SpooledItem }> {
  const files = readdirSync(dir);
  const acked = new Set(files.filter((f) => f.endsWith('.acks')).flatMap((f) => decodeAcks(readFileSync(join(dir, f)))));
  return files
    .filter((f) => /^segment-\d+\.log$/.test(f))
    .sort()
    .flatMap((f) => {
      const bytes = readFileSync(join(dir, f));
      return scanFrames(bytes)
        .frames.filter((frame) => !acked.has(frame.seq))
        .map((frame) => ({ seq: frame.seq, item: JSON.parse(framePayload(bytes, frame).toString('utf8')) as SpooledItem }));
    });
}

/** The payload numbers of some jobs, sorted (a duplicate shows as a number twice). */
const numbers = (items: Array<{ data: { n: number } }>) => items.map((item) => item.data.n).sort((a, b) => a - b);

/** Bull and BullMQ: a look at the queue in Redis, and a way to add a job as the sink would. */
const queueLibraries = [
  {
    sink: 'bull',
    library: 'Bull',
    open(prefix: string) {
      const queue = new Bull(QUEUE, { redis: { host: redis.host, port: redis.port }, prefix });
      return {
        waiting: async () => (await queue.getWaiting(0, -1)).map((job) => ({ id: String(job.id), data: job.data as { n: number } })),
        counts: () => queue.getJobCounts(),
        add: (item: SpooledItem) => queue.add(item.name, item.data, { jobId: item.id }).then(() => undefined),
        close: () => queue.close(),
      };
    },
  },
  {
    sink: 'bullmq',
    library: 'BullMQ',
    open(prefix: string) {
      const queue = new BullMqQueue(QUEUE, { connection: { host: redis.host, port: redis.port }, prefix });
      return {
        waiting: async () => (await queue.getWaiting(0, -1)).map((job) => ({ id: String(job.id), data: job.data as { n: number } })),
        counts: () => queue.getJobCounts(),
        add: (item: SpooledItem) => queue.add(item.name, item.data, { jobId: item.id }).then(() => undefined),
        close: () => queue.close(),
      };
    },
  },
];

describe.each(platforms.map((p) => p.name))('disk spool across SIGKILL, as real processes (%s)', (adapter) => {
  describe.each(queueLibraries)('$library sink', ({ sink, open }) => {
    it('items spooled while Redis is down survive kill -9 and reach Redis exactly once from the next process (jobId = item id)', async () => {
      const N = 120;
      const prefix = `${RUN}-${adapter}-${sink}`;
      const spoolDir = tempDir();
      const env = { ADAPTER: adapter, SINK: sink, REDIS_PORT: String(redis.port), PREFIX: prefix, SPOOL_DIR: spoolDir };
      await redis.stop();

      const first = await startApp(env);
      await defer(first, N);
      await spooledAndSynced(first, N);
      // An outage longer than the queue sinks' own retry budget (10 attempts, with the fixture's quick
      // backoff): a spooled sink retries until delivered, nothing is dead-lettered (and so acked away).
      await eventually(async () => expect((await first.sink()).failedWrites).toBeGreaterThan(12), 15_000, 50);
      const before = await first.sink();
      expect(before).toMatchObject({ accepted: N, delivered: 0, pending: N, dropped: 0, deadLettered: 0 });
      expect(before.spool).toMatchObject({ dir: join(spoolDir, sink), pending: N, appended: N, acked: 0, replayed: 0 });
      await first.kill9();

      // What the first process left on disk: every item, each with a stable id.
      const spooled = readSpool(join(spoolDir, sink));
      expect(numbers(spooled.map((r) => r.item))).toEqual(range(0, N));
      expect(spooled.every((r) => /^dw-[0-9a-f-]{36}$/.test(r.item.id))).toBe(true);

      // The crash window between a write reaching Redis and its ack: the first 15 jobs are in Redis
      // already (added here, as the sink would have, by their ids) while the spool still holds them.
      await redis.start();
      const queue = open(prefix);
      try {
        for (const record of spooled.slice(0, 15)) await queue.add(record.item);

        const second = await startApp(env);
        const after = await drained(second);
        expect(after).toMatchObject({ accepted: N, delivered: N, pending: 0, dropped: 0, deadLettered: 0 });
        expect(after.spool).toMatchObject({ replayed: N, pending: 0, onDiskOnly: 0, tornRecords: 0, unreadable: 0 });
        expect(second.process.output).toMatch(new RegExp(`Spool of sink "${sink}" \\(.*\\): ${N} item\\(s\\) left by a previous process`));

        const jobs = await queue.waiting();
        expect(jobs.length).toBe(N); // no duplicates: 15 jobs were delivered twice, Redis kept one of each
        expect(numbers(jobs)).toEqual(range(0, N));
        expect(new Set(jobs.map((job) => job.id))).toEqual(new Set(spooled.map((r) => r.item.id)));
        expect(await queue.counts()).toMatchObject({ waiting: N, active: 0, delayed: 0, failed: 0 });
        process.stdout.write(
          `[spool-crash ${adapter} ${sink}] spooled ${before.spool.pending} (${before.failedWrites} failed writes before kill -9), ` +
            `replayed ${after.spool.replayed}, jobs in Redis ${jobs.length} (15 of them added twice)\n`,
        );
      } finally {
        await queue.close();
      }
    }, 40_000);
  });

  describe('HTTP sink', () => {
    const spooledHttpApp = async (receiver: HttpReceiver, extra: Record<string, string> = {}) => {
      const spoolDir = tempDir();
      const env = { ADAPTER: adapter, SINK: 'http', RECEIVER_URL: receiver.url('/ingest'), SPOOL_DIR: spoolDir, ...extra };
      return { env, spoolDir, sinkDir: extra.SPOOL_PER_SINK === '1' ? spoolDir : join(spoolDir, 'http') };
    };
    const wireItems = (receiver: HttpReceiver) => receiver.delivered('/ingest') as Array<{ id: string; data: { n: number } }>;

    it('items spooled while the receiver answers 503 survive kill -9 and are all received from the next process, each POST with an Idempotency-Key', async () => {
      const N = 120;
      const receiver = await HttpReceiver.start(() => ({ status: 503 }));
      receivers.push(receiver);
      const { env, sinkDir } = await spooledHttpApp(receiver);

      const first = await startApp(env);
      await defer(first, N);
      const before = await spooledAndSynced(first, N);
      expect(before).toMatchObject({ accepted: N, delivered: 0, pending: N, dropped: 0, deadLettered: 0 });
      expect(before.spool).toMatchObject({ pending: N, appended: N, acked: 0 });
      await receiver.waitUntil(() => receiver.requests.length > 0, 'a POST by the first process');
      await first.kill9();
      const refusedPosts = receiver.requests.length;
      const idsOffered = new Map<number, string>();
      for (const request of receiver.requests) {
        for (const item of request.items as Array<{ id: string; data: { n: number } }>) idsOffered.set(item.data.n, item.id);
      }
      expect(readSpool(sinkDir).length).toBe(N);

      receiver.responder = () => ({ status: 200 });
      const second = await startApp(env);
      const after = await drained(second);
      expect(after).toMatchObject({ accepted: N, delivered: N, pending: 0, dropped: 0, deadLettered: 0 });
      expect(after.spool).toMatchObject({ replayed: N, pending: 0 });

      const items = wireItems(receiver);
      const ids = new Set(items.map((item) => item.id));
      const duplicates = items.length - ids.size;
      expect(new Set(items.map((item) => item.data.n))).toEqual(new Set(range(0, N))); // every spooled item, at least once
      expect(ids.size).toBe(N); // one stable id per item
      expect([...ids].every((id) => /^dw-[0-9a-f-]{36}$/.test(id))).toBe(true);
      // The ids the first process offered (refused with 503) are the ones the second delivered.
      for (const item of items) if (idsOffered.has(item.data.n)) expect(item.id).toBe(idsOffered.get(item.data.n));
      expect(receiver.requests.every((request) => /^dw-[\w-]{32}$/.test(String(request.headers['idempotency-key'])))).toBe(true);
      process.stdout.write(
        `[spool-crash ${adapter} http] spooled ${N}, replayed ${after.spool.replayed}, received ${items.length} items ` +
          `(${duplicates} duplicates) in ${receiver.requests.length - refusedPosts} POSTs after ${refusedPosts} refused\n`,
      );
    }, 40_000);

    it('a torn tail appended to the newest segment after kill -9 is skipped and counted; every whole record is replayed', async () => {
      const N = 60;
      const receiver = await HttpReceiver.start(() => ({ status: 503 }));
      receivers.push(receiver);
      const { env, sinkDir } = await spooledHttpApp(receiver);

      const first = await startApp(env);
      await defer(first, N);
      await spooledAndSynced(first, N);
      await first.kill9();

      // A crash in the middle of a write: the next record's frame, cut in half, at the end of the newest segment.
      const newest = readdirSync(sinkDir).filter((f) => /^segment-\d+\.log$/.test(f)).sort().at(-1)!;
      const bytes = readFileSync(join(sinkDir, newest));
      const lastSeq = scanFrames(bytes).frames.at(-1)!.seq;
      const torn = { kind: 'job', id: 'dw-torn', queue: QUEUE, name: 'crash', data: { n: -1 }, createdAt: Date.now() };
      const frame = encodeFrame(lastSeq + 1, Date.now(), Buffer.from(JSON.stringify(torn)));
      appendFileSync(join(sinkDir, newest), frame.subarray(0, Math.floor(frame.length / 2)));

      receiver.responder = () => ({ status: 200 });
      const second = await startApp(env);
      const after = await drained(second);
      expect(after.spool).toMatchObject({ tornRecords: 1, replayed: N, pending: 0, unreadable: 0 });
      expect(after).toMatchObject({ accepted: N, delivered: N, deadLettered: 0 });
      expect(second.process.output).toMatch(/1 torn record\(s\) \(cut short by a crash or failing their checksum\) were skipped/);
      const items = wireItems(receiver);
      expect(new Set(items.map((item) => item.data.n))).toEqual(new Set(range(0, N)));
      expect(items.some((item) => item.id === 'dw-torn')).toBe(false);
      process.stdout.write(`[spool-crash ${adapter} torn] spooled ${N}, torn ${after.spool.tornRecords}, replayed ${after.spool.replayed}, received ${items.length}\n`);
    }, 40_000);

    it('maxBytes reached while the receiver is down: refusals counted as dropped, every request 2xx, the spooled items delivered once it is back, then room again', async () => {
      const M = 300;
      const receiver = await HttpReceiver.start(() => ({ status: 503 }));
      receivers.push(receiver);
      // A small spool: one segment (the smallest maxItemBytes 1024 allows), items of about 600 bytes.
      const { env } = await spooledHttpApp(receiver, {
        MAX_ITEM_BYTES: '1024',
        SPOOL_SEGMENT_BYTES: String(1024 + 65536),
        SPOOL_MAX_BYTES: String(1024 + 65536),
        PAD_BYTES: '400',
      });

      const app = await startApp(env);
      await defer(app, M);
      const full = await spooledAndSynced(app, M);
      const refused = full.spool.refused;
      expect(refused).toBeGreaterThan(0);
      expect(full.dropped).toBe(refused);
      expect(full.spool).toMatchObject({ appended: M - refused, pending: M - refused, failed: 0 });
      expect(full.spool.bytes).toBeLessThanOrEqual(full.spool.maxBytes);
      expect(full).toMatchObject({ accepted: M, delivered: 0, pending: M - refused, deadLettered: 0 });
      expect(app.process.output.match(/Items are dropped/g)).toHaveLength(1); // logged once for the episode

      receiver.responder = () => ({ status: 200 });
      const back = await drained(app);
      expect(back).toMatchObject({ accepted: M, delivered: M - refused, dropped: refused, deadLettered: 0 });
      const items = wireItems(receiver);
      expect(new Set(items.map((item) => item.id)).size).toBe(M - refused);

      // The spool has room again: new items are spooled and delivered, none dropped.
      await defer(app, 20, M);
      const later = await eventually(async () => {
        const sink = await app.sink();
        expect(sink).toMatchObject({ accepted: M + 20, delivered: M - refused + 20, pending: 0 });
        return sink;
      }, 10_000, 50);
      expect(later.dropped).toBe(refused);
      expect(app.process.output).toMatch(new RegExp(`has room again; ${refused} item\\(s\\) were refused while it was full`));
      process.stdout.write(`[spool-crash ${adapter} full] ${M} accepted, ${M - refused} spooled, ${refused} refused\n`);
    }, 40_000);

    it('a second process on the same spool directory fails at bootstrap with SpoolLockedError; the first keeps working', async () => {
      const receiver = await HttpReceiver.start();
      receivers.push(receiver);
      const { env, sinkDir } = await spooledHttpApp(receiver, { SPOOL_PER_SINK: '1' });

      const first = await startApp(env);
      await defer(first, 20);
      await drained(first);

      const second = new NodeApp(fixture, { SYNC_INTERVAL_MS: String(SYNC_MS), ...env });
      apps.push(second);
      const exit = await second.exited;
      expect(exit.signal).toBeNull();
      expect(exit.code).toBeGreaterThan(0);
      expect(second.output).toContain('SpoolLockedError');
      expect(second.output).toContain(
        `Spool directory ${sinkDir} is locked by process ${first.pid}, which is running: one process per spool directory`,
      );
      expect(second.output).not.toMatch(/"port"/);
      expect(readFileSync(join(sinkDir, 'spool.lock'), 'utf8').trim()).toBe(String(first.pid));

      await defer(first, 20, 20);
      const after = await drained(first);
      expect(after).toMatchObject({ accepted: 40, delivered: 40, dropped: 0, deadLettered: 0 });
      expect(new Set(wireItems(receiver).map((item) => item.data.n))).toEqual(new Set(range(0, 40)));
    }, 40_000);
  });
});
