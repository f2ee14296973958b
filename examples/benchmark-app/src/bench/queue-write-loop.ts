/**
 * `node dist/bench/queue-write-loop.js`: how long one `BullMqSink` (or `RedisStreamSink`) write holds
 * the event loop. Starts a private Redis, writes batches of N jobs to a BullMQ queue (or N entries to a
 * stream) through the sink (no HTTP), and while
 * each write runs, a `setImmediate` chain samples `process.cpuUsage()` once per loop turn: the largest
 * CPU time between two turns is the longest task the write ran without letting the loop turn (CPU,
 * not wall time, so a busy machine's preemption does not count; garbage collection in that turn
 * does), the turns whose task took over 2 ms, and the write's whole CPU ÷ N, its cost per job. Repeats alternate the batch sizes; medians.
 *
 *   node dist/bench/queue-write-loop.js --batches 32,128,512 --repeats 15
 *   node dist/bench/queue-write-loop.js --sink redis-stream        # RedisStreamSink writes of N entries
 *   node dist/bench/queue-write-loop.js --baseline ../other/packages/nestjs-deferred-work/dist
 *                                                                  # another build's sink, alternating
 */
import { parseArgs } from 'node:util';
import type { JobItem, LogItem } from 'nestjs-deferred-work';
import { startRedis } from './infra.js';

interface Sample {
  longestTaskUs: number;
  /** Loop turns whose task took more than 2 ms of CPU. */
  over2ms: number;
  cpuUsPerJob: number;
  turns: number;
}

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** Runs `write` while sampling the CPU at every loop turn. */
async function sampled(write: () => Promise<unknown>, jobs: number): Promise<Sample> {
  let running = true;
  let last = cpuUs();
  let longest = 0;
  let turns = 0;
  let over2ms = 0;
  const turn = () => {
    const now = cpuUs();
    longest = Math.max(longest, now - last);
    if (now - last > 2000) over2ms++;
    last = now;
    turns++;
    if (running) setImmediate(turn);
  };
  const start = cpuUs();
  setImmediate(turn);
  await write();
  running = false;
  const end = cpuUs();
  longest = Math.max(longest, end - last);
  if (end - last > 2000) over2ms++;
  return { longestTaskUs: longest, over2ms, cpuUsPerJob: (end - start) / jobs, turns };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * A sink under test: its label (this build, or the `--baseline` build), how to make a batch of N items
 * as the dispatcher hands it over (validated when deferred), and how to write one.
 */
interface Writer {
  label: string;
  batch(n: number): unknown[];
  write(items: unknown[]): Promise<unknown>;
}

const noSignal = () => ({ signal: new AbortController().signal, attempt: 1 });

/** BullMQ: `BullMqSink` writes of N jobs to one queue; `clear` empties the queue between repeats. */
async function bullmqWriters(port: number, baseline: string | undefined, closers: Array<() => Promise<unknown>>): Promise<{ writers: Writer[]; clear: () => Promise<unknown> }> {
  const { Queue } = await import('bullmq');
  const queue = new Queue('bench-loop', { connection: { host: '127.0.0.1', port } });
  closers.push(() => queue.close());
  await queue.waitUntilReady();
  const data = { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3 };
  const batch = (n: number): JobItem[] =>
    Array.from({ length: n }, () => ({ kind: 'job' as const, queue: 'bench-loop', name: 'confirm', data, when: 'always' as const, createdAt: Date.now() }));
  const builds: Array<[string, string]> = [['this build', 'nestjs-deferred-work/bullmq'], ...(baseline ? [['baseline', `${baseline}/bullmq/index.js`] as [string, string]] : [])];
  const writers = await Promise.all(
    builds.map(async ([label, from]) => {
      const { BullMqSink } = (await import(from)) as typeof import('nestjs-deferred-work/bullmq');
      const sink = new BullMqSink({ name: 'loop', queues: { 'bench-loop': queue } });
      return { label, batch, write: (items: unknown[]) => sink.write(items as JobItem[], noSignal()) };
    }),
  );
  return { writers, clear: () => queue.obliterate({ force: true }) };
}

/** Redis Streams: `RedisStreamSink` writes of N log records (about 300 bytes each) to one stream. */
async function streamWriters(port: number, baseline: string | undefined, closers: Array<() => Promise<unknown>>): Promise<{ writers: Writer[]; clear: () => Promise<unknown> }> {
  const { Redis } = await import('ioredis');
  const redis = new Redis({ host: '127.0.0.1', port });
  closers.push(async () => redis.disconnect());
  await redis.ping(); // connected before the first write (the sink sends nothing while it is not)
  const fields = { orderId: 'o-1', customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3, channel: 'web', payment: 'card', shipping: { method: 'standard', country: 'DE' } };
  const batch = (n: number): LogItem[] => Array.from({ length: n }, () => ({ kind: 'log' as const, level: 'info' as const, message: 'order accepted', fields, when: 'always' as const, createdAt: Date.now() }));
  const builds: Array<[string, string]> = [['this build', 'nestjs-deferred-work/redis-streams'], ...(baseline ? [['baseline', `${baseline}/redis-streams/index.js`] as [string, string]] : [])];
  const writers = await Promise.all(
    builds.map(async ([label, from]) => {
      const { RedisStreamSink } = (await import(from)) as typeof import('nestjs-deferred-work/redis-streams');
      const sink = new RedisStreamSink({ name: 'loop', client: redis, stream: 'bench-loop' });
      await sink.attach({ resolve: () => undefined, holdOpen: () => undefined, providers: () => [], warn: () => undefined } as never);
      // each entry is built when its item is deferred (validate), not in the write
      const validated = (n: number) => batch(n).map((item) => (sink.validate(item), item));
      return { label, batch: validated, write: (items: unknown[]) => sink.write(items as LogItem[], noSignal()) };
    }),
  );
  return { writers, clear: () => redis.del('bench-loop') };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { batches: { type: 'string', default: '32,128,512' }, repeats: { type: 'string', default: '15' }, sink: { type: 'string', default: 'bullmq' }, baseline: { type: 'string' } },
  });
  const batches = values.batches.split(',').map(Number);
  const repeats = Number(values.repeats);
  if (values.sink !== 'bullmq' && values.sink !== 'redis-stream') throw new Error(`--sink must be bullmq or redis-stream, got "${values.sink}"`);
  const redis = await startRedis();
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const make = values.sink === 'bullmq' ? bullmqWriters : streamWriters;
    const { writers, clear } = await make(redis.port, values.baseline, closers);
    // warm-up: JIT and the connection
    for (let i = 0; i < 5; i++) for (const w of writers) for (const n of batches) await w.write(w.batch(n));
    await clear();
    const key = (w: Writer, n: number) => `${w.label}|${n}`;
    const samples = new Map<string, Sample[]>();
    for (let r = 0; r < repeats; r++) {
      for (let i = 0; i < batches.length; i++) {
        const n = batches[(i + r) % batches.length];
        for (let k = 0; k < writers.length; k++) {
          const w = writers[(k + r) % writers.length];
          const items = w.batch(n);
          const sample = await sampled(() => w.write(items), n);
          samples.set(key(w, n), [...(samples.get(key(w, n)) ?? []), sample]);
        }
      }
      await clear();
    }
    const what = values.sink === 'bullmq' ? 'jobs' : 'entries';
    console.log(`${values.sink === 'bullmq' ? 'BullMqSink' : 'RedisStreamSink'}, ${repeats} repeats, medians`);
    console.log(`| build | ${what} per write | longest task µs (CPU) | tasks over 2 ms | CPU µs per ${what === 'jobs' ? 'job' : 'entry'} | loop turns during the write |`);
    console.log(`| --- | ---: | ---: | ---: | ---: | ---: |`);
    for (const w of writers) {
      for (const n of batches) {
        const s = samples.get(key(w, n))!;
        const cells = [w.label, n, median(s.map((x) => x.longestTaskUs)).toFixed(0), median(s.map((x) => x.over2ms)).toFixed(0), median(s.map((x) => x.cpuUsPerJob)).toFixed(1), median(s.map((x) => x.turns)).toFixed(0)];
        console.log(`| ${cells.join(' | ')} |`);
      }
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
