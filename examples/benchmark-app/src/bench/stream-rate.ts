/**
 * The Redis Streams sink's own rate, without HTTP: entries per second and Node CPU µs per entry of
 * `RedisStreamSink.write()` (batches of 100 and 500 entries; the sink pipelines up to 50 `XADD`s at a time) against one awaited `XADD` per entry,
 * on a private Redis. The modes alternate within each repeat, so they share the machine's load.
 *
 *   node dist/bench/stream-rate.js [--entries 20000] [--repeats 3] [--out results/runs/<folder>] [--baseline <path>]
 *
 * `--baseline path/to/nestjs-deferred-work/dist/redis-streams/index.js` adds the sink of another build
 * (writes of 100 and 500 entries), alternating with this one in the same run.
 *
 * Writes `stream-rate.json` and `stream-rate.md` to `--out` (relative to examples/benchmark-app).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { LogItem } from 'nestjs-deferred-work';
import { RedisStreamSink, redisStreamDefaultFields } from 'nestjs-deferred-work/redis-streams';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import { flagValue } from './args.js';
import { redisCpuUs, startRedis } from './infra.js';

interface Mode {
  name: string;
  /** Entries per pipeline; 1: one awaited `XADD` at a time. */
  batch: number;
  /** A bare ioredis pipeline of `XADD`s whose arguments were built before the clock started (no sink): the floor. */
  raw?: boolean;
  /** The sink of the `--baseline` build instead of this one. */
  baseline?: boolean;
}

const BASE_MODES: readonly Mode[] = [
  { name: 'awaited XADD, one at a time', batch: 1 },
  { name: 'ioredis pipeline of 100, arguments built in advance (no sink)', batch: 100, raw: true },
  { name: 'sink write of 100 entries', batch: 100 },
  { name: 'sink write of 500 entries (the default maxBatchSize)', batch: 500 },
];

interface Sample {
  mode: string;
  batch: number;
  entries: number;
  entriesPerSec: number;
  nodeCpuUsPerEntry: number;
  redisCpuUsPerEntry: number;
}

/** A log record of about 300 bytes, like the HTTP scenario's. */
function items(count: number): LogItem[] {
  const fields = { orderId: 'o-1', customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3, channel: 'web', payment: 'card', shipping: { method: 'standard', country: 'DE' } };
  return Array.from({ length: count }, (_, i) => ({ kind: 'log', level: 'info', message: 'order accepted', fields, when: 'always', createdAt: Date.now(), id: `dw-rate-${i}` }));
}

async function main(): Promise<void> {
  const baselinePath = flagValue('baseline', '');
  const MODES: readonly Mode[] = baselinePath
    ? [...BASE_MODES, { name: 'baseline build: sink write of 100 entries', batch: 100, baseline: true }, { name: 'baseline build: sink write of 500 entries', batch: 500, baseline: true }]
    : BASE_MODES;
  const entries = Number(flagValue('entries', '20000'));
  const repeats = Number(flagValue('repeats', '3'));
  const here = path.dirname(fileURLToPath(import.meta.url));
  const out = path.resolve(here, '../..', flagValue('out', 'results'));
  const redis = await startRedis();
  const client = new Redis({ host: '127.0.0.1', port: redis.port });
  const stream = 'bench:stream-rate';
  const sink = new RedisStreamSink({ client, stream });
  const baseline = baselinePath ? new ((await import(pathToFileURL(path.resolve(baselinePath)).href)) as { RedisStreamSink: typeof RedisStreamSink }).RedisStreamSink({ client, stream }) : undefined;
  const signal = new AbortController().signal;
  const samples: Sample[] = [];
  try {
    await client.ping();
    await sink.attach(sinkAttachContext());
    await baseline?.attach(sinkAttachContext());
    // warm-up: the JIT, the connection, the stream's first nodes
    await run({ name: 'warm-up', batch: 100 }, items(5_000));
    if (baseline) await run({ name: 'warm-up', batch: 100, baseline: true }, items(5_000));
    for (let r = 0; r < repeats; r++) {
      for (const mode of r % 2 === 0 ? MODES : [...MODES].reverse()) {
        await client.del(stream);
        samples.push(await run(mode, items(mode.batch === 1 ? Math.min(entries, 5_000) : entries)));
        const s = samples[samples.length - 1];
        console.log(`${mode.name}: ${Math.round(s.entriesPerSec)} entries/s, Node ${s.nodeCpuUsPerEntry.toFixed(1)} µs/entry, Redis ${s.redisCpuUsPerEntry.toFixed(1)} µs/entry`);
      }
    }
  } finally {
    client.disconnect();
    await redis.stop();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const summary = MODES.map((mode) => {
    const mine = samples.filter((s) => s.mode === mode.name);
    return { mode: mode.name, batch: mode.batch, entriesPerSec: median(mine.map((s) => s.entriesPerSec)), nodeCpuUsPerEntry: median(mine.map((s) => s.nodeCpuUsPerEntry)), redisCpuUsPerEntry: median(mine.map((s) => s.redisCpuUsPerEntry)) };
  });
  const machine = `Node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load ${os.loadavg().map((l) => l.toFixed(2)).join('/')} at the end, Redis ${redis.version} on 127.0.0.1`;
  await mkdir(out, { recursive: true });
  await writeFile(path.join(out, 'stream-rate.json'), JSON.stringify({ machine, entries, repeats, summary, samples }, null, 2) + '\n');
  const md = [
    '# Redis Streams sink: its own rate',
    '',
    `${machine}. ${entries} entries per run (5,000 for one awaited XADD at a time), ${repeats} runs per mode, modes alternating; medians.`,
    '',
    '| mode | entries/s | Node CPU µs/entry | Redis CPU µs/entry |',
    '| --- | ---: | ---: | ---: |',
    ...summary.map((s) => `| ${s.mode} | ${Math.round(s.entriesPerSec).toLocaleString('en')} | ${s.nodeCpuUsPerEntry.toFixed(1)} | ${s.redisCpuUsPerEntry.toFixed(1)} |`),
    '',
  ].join('\n');
  await writeFile(path.join(out, 'stream-rate.md'), md);
  console.log(`\n${md}\nWrote ${path.relative(process.cwd(), out)}/stream-rate.json and stream-rate.md`);

  async function run(mode: Mode, batch: LogItem[]): Promise<Sample> {
    const args = mode.raw ? batch.map((item) => [stream, '*', ...Object.entries(redisStreamDefaultFields(item)).flat()]) : [];
    const redisBefore = await redisCpuUs(redis.port);
    const cpu = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    if (mode.batch === 1) {
      for (const item of batch) await client.xadd(stream, '*', ...Object.entries(redisStreamDefaultFields(item)).flat());
    } else if (mode.raw) {
      for (let i = 0; i < args.length; i += mode.batch) {
        const pipeline = client.pipeline();
        for (const a of args.slice(i, i + mode.batch)) pipeline.xadd(...(a as [string, string, ...string[]]));
        await pipeline.exec();
      }
    } else {
      for (let i = 0; i < batch.length; i += mode.batch) {
        const result = await (mode.baseline ? baseline! : sink).write(batch.slice(i, i + mode.batch), { signal, attempt: 1 });
        if (result?.failed?.length) throw new Error(`${result.failed.length} entries failed: ${String(result.failed[0].error)}`);
      }
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const used = process.cpuUsage(cpu);
    const redisUs = (await redisCpuUs(redis.port)) - redisBefore;
    const written = await client.xlen(stream);
    if (mode.name !== 'warm-up' && written !== batch.length) throw new Error(`${mode.name}: ${written} entries in the stream, ${batch.length} written`);
    return { mode: mode.name, batch: mode.batch, entries: batch.length, entriesPerSec: batch.length / seconds, nodeCpuUsPerEntry: (used.user + used.system) / batch.length, redisCpuUsPerEntry: redisUs / batch.length };
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
