/**
 * `node dist/bench/queue-write-loop.js`: how long one `BullMqSink` write holds the event loop. Starts
 * a private Redis, writes batches of N jobs to a BullMQ queue through the sink (no HTTP), and while
 * each write runs, a `setImmediate` chain samples `process.cpuUsage()` once per loop turn: the largest
 * CPU time between two turns is the longest task the write ran without letting the loop turn (CPU,
 * not wall time, so a busy machine's preemption does not count; garbage collection in that turn
 * does), the turns whose task took over 2 ms, and the write's whole CPU ÷ N, its cost per job. Repeats alternate the batch sizes; medians.
 *
 *   node dist/bench/queue-write-loop.js --batches 32,128,512 --repeats 15
 */
import { parseArgs } from 'node:util';
import type { JobItem } from 'nestjs-deferred-work';
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

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '32,128,512' }, repeats: { type: 'string', default: '15' } } });
  const batches = values.batches.split(',').map(Number);
  const repeats = Number(values.repeats);
  const redis = await startRedis();
  const [{ Queue }, { BullMqSink }] = await Promise.all([import('bullmq'), import('nestjs-deferred-work/bullmq')]);
  const queue = new Queue('bench-loop', { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    await queue.waitUntilReady();
    const sink = new BullMqSink({ name: 'loop', queues: { 'bench-loop': queue } });
    const data = { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3 };
    const batch = (n: number): JobItem[] =>
      Array.from({ length: n }, () => ({ kind: 'job' as const, queue: 'bench-loop', name: 'confirm', data, when: 'always' as const, createdAt: Date.now() }));
    // warm-up: JIT and the connection
    for (let i = 0; i < 5; i++) for (const n of batches) await sink.write(batch(n), { signal: new AbortController().signal, attempt: 1 });
    await queue.obliterate({ force: true });
    const samples = new Map<number, Sample[]>(batches.map((n) => [n, []]));
    for (let r = 0; r < repeats; r++) {
      for (let i = 0; i < batches.length; i++) {
        const n = batches[(i + r) % batches.length];
        const items = batch(n);
        const sample = await sampled(() => sink.write(items, { signal: new AbortController().signal, attempt: 1 }), n);
        samples.get(n)!.push(sample);
      }
      await queue.obliterate({ force: true });
    }
    console.log(`| jobs per write | longest task µs (CPU) | tasks over 2 ms | CPU µs per job | loop turns during the write |`);
    console.log(`| ---: | ---: | ---: | ---: | ---: |`);
    for (const n of batches) {
      const s = samples.get(n)!;
      const cells = [n, median(s.map((x) => x.longestTaskUs)).toFixed(0), median(s.map((x) => x.over2ms)).toFixed(0), median(s.map((x) => x.cpuUsPerJob)).toFixed(1), median(s.map((x) => x.turns)).toFixed(0)];
      console.log(`| ${cells.join(' | ')} |`);
    }
  } finally {
    await queue.close();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
