/**
 * `node dist/bench/queue-add-cost.js`: the process's CPU per job of one `BullMqSink` write against
 * BullMQ's own calls doing the same adds — one `addBulk`, and one `queue.add` per job at once — for
 * writes of several sizes, to a private Redis, without HTTP. The variants alternate within every
 * repeat; medians. `--baseline path/to/bullmq/index.js` adds a second build of the sink (e.g. the
 * library before a change) to the same run.
 *
 *   node dist/bench/queue-add-cost.js --sizes 1,2,4,32,512 --repeats 100
 */
import { parseArgs } from 'node:util';
import type { JobItem } from 'nestjs-deferred-work';
import { startRedis } from './infra.js';

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

type Variant = (items: JobItem[]) => Promise<unknown>;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { sizes: { type: 'string', default: '1,2,4,32,512' }, repeats: { type: 'string', default: '100' }, baseline: { type: 'string' } },
  });
  const sizes = values.sizes.split(',').map(Number);
  const repeats = Number(values.repeats);
  const redis = await startRedis();
  const [{ Queue }, { BullMqSink }] = await Promise.all([import('bullmq'), import('nestjs-deferred-work/bullmq')]);
  const queue = new Queue('bench-add', { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    await queue.waitUntilReady();
    const write = (sink: InstanceType<typeof BullMqSink>): Variant => (items) => sink.write(items, { signal: new AbortController().signal, attempt: 1 });
    const variants: Record<string, Variant> = { sink: write(new BullMqSink({ name: 'sink', queues: { 'bench-add': queue } })) };
    if (values.baseline) {
      const { BullMqSink: Baseline } = (await import(values.baseline)) as { BullMqSink: typeof BullMqSink };
      variants.baseline = write(new Baseline({ name: 'baseline', queues: { 'bench-add': queue } }));
    }
    variants.addBulk = (items) => queue.addBulk(items.map((item) => ({ name: item.name, data: item.data, opts: { jobId: item.id } })));
    variants['add each'] = (items) => Promise.all(items.map((item) => queue.add(item.name, item.data, { jobId: item.id })));
    const names = Object.keys(variants);
    const data = { orderId: 4711, customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3 };
    let seq = 0;
    const batch = (n: number): JobItem[] =>
      Array.from({ length: n }, () => ({ kind: 'job' as const, queue: 'bench-add', name: 'confirm', data, when: 'always' as const, createdAt: Date.now(), id: `job-${++seq}` }));
    console.log(`| jobs per write | ${names.map((n) => `${n} (CPU µs per job)`).join(' | ')} |`);
    console.log(`| ---: | ${names.map(() => '---:').join(' | ')} |`);
    for (const size of sizes) {
      const runs = Math.max(20, Math.round(repeats / Math.sqrt(size)));
      for (let w = 0; w < 10; w++) for (const name of names) await variants[name](batch(size)); // warm-up
      const samples = new Map<string, number[]>(names.map((n) => [n, []]));
      for (let r = 0; r < runs; r++) {
        for (let k = 0; k < names.length; k++) {
          const name = names[(k + r) % names.length];
          const items = batch(size);
          const start = cpuUs();
          await variants[name](items);
          samples.get(name)!.push((cpuUs() - start) / size);
        }
        if (r % 10 === 9) await queue.obliterate({ force: true });
      }
      console.log(`| ${size} | ${names.map((n) => median(samples.get(n)!).toFixed(1)).join(' | ')} |`);
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
