/**
 * `node dist/bench/redis-gc.js`: what a way of sending Redis commands leaves to the garbage collector,
 * without HTTP. Each mode runs in a child process of its own under `--trace-gc-nvp`, for `--seconds`:
 * two loops, each building a batch of `--batch` `XADD`s, waiting 5 ms (a linger) and sending them,
 * while a timer makes short-lived garbage as a server's requests would. Prints, per mode, the median
 * bytes each scavenge promoted to the old generation, the median scavenge pause, the garbage
 * collector's pauses per second and the process's CPU per entry, to a private Redis.
 *
 * Modes: `pipeline` (an ioredis pipeline per 50), `corked` (one `XADD` per entry, the socket corked:
 * what `RedisStreamSink` does), `alone` (one `XADD` per entry, nothing corked), `sink`
 * (`RedisStreamSink.write()`).
 *
 *   node dist/bench/redis-gc.js [--seconds 6] [--batch 60] [--repeats 3] [--out results/runs/<folder>]
 */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import type { LogItem } from 'nestjs-deferred-work';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import { startRedis } from './infra.js';

const here = fileURLToPath(import.meta.url);
const MODES = ['pipeline', 'corked', 'alone', 'sink'] as const;
type Mode = (typeof MODES)[number];

const PER_SEND = 50;
const STREAM = 'dw-redis-gc';

interface ChildResult {
  entries: number;
  cpuUs: number;
  gcMs: number;
  seconds: number;
}

/** The child: sends batches for `seconds` in `mode`, then prints one JSON line. */
async function child(mode: Mode, url: string, seconds: number, batchSize: number): Promise<void> {
  const redis = new Redis(url);
  await redis.ping();
  const sink = new RedisStreamSink({ client: redis, stream: STREAM, maxLen: 10_000 });
  await sink.attach(sinkAttachContext());
  let gcMs = 0;
  const { PerformanceObserver } = await import('node:perf_hooks');
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  }).observe({ entryTypes: ['gc'] });
  let sink_ = 0;
  // short-lived garbage, as requests make
  const churn = setInterval(() => {
    for (let i = 0; i < 2000; i++) sink_ += [i, { i }].length;
  }, 1);
  let entries = 0;
  let seq = 0;
  const send = async (): Promise<void> => {
    const items: LogItem[] = [];
    for (let i = 0; i < batchSize; i++) {
      seq++;
      items.push({ kind: 'log', level: 'info', message: 'order accepted', fields: { orderId: seq, customer: 'c-42', total: 99.5 }, when: 'always', createdAt: Date.now(), id: `dw-gc-${seq}` });
    }
    const fields = items.map((item) => ['id', item.id!, 'kind', 'log', 'payload', JSON.stringify({ message: item.message, fields: item.fields })]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (mode === 'sink') {
      await sink.write(items, { signal: new AbortController().signal, attempt: 1 });
    } else if (mode === 'pipeline') {
      for (let from = 0; from < fields.length; from += PER_SEND) {
        const pipeline = redis.pipeline();
        for (const f of fields.slice(from, from + PER_SEND)) pipeline.xadd(STREAM, 'MAXLEN', '~', '10000', '*', ...f);
        await pipeline.exec();
      }
    } else {
      for (let from = 0; from < fields.length; from += PER_SEND) {
        const socket = redis.stream;
        if (mode === 'corked') socket.cork();
        const calls = fields.slice(from, from + PER_SEND).map((f) => redis.xadd(STREAM, 'MAXLEN', '~', '10000', '*', ...f));
        if (mode === 'corked') socket.uncork();
        await Promise.all(calls);
      }
    }
    entries += batchSize;
  };
  const start = process.cpuUsage();
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    [0, 1].map(async () => {
      while (Date.now() < end) await send();
    }),
  );
  const cpu = process.cpuUsage(start);
  clearInterval(churn);
  const result: ChildResult = { entries, cpuUs: cpu.user + cpu.system, gcMs, seconds };
  process.stdout.write(`RESULT ${JSON.stringify(result)} ${sink_ > 0 ? '' : ' '}\n`);
  await redis.del(STREAM);
  redis.disconnect();
}

interface Row {
  mode: Mode;
  promotedKb: number;
  scavengeMs: number;
  gcMsPerSec: number;
  cpuUsPerEntry: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = (s.length - 1) / 2;
  return (s[Math.floor(mid)] + s[Math.ceil(mid)]) / 2;
};

/** One child run: its scavenges' promoted bytes and pauses (the second half, once warm) and its result line. */
function runChild(mode: Mode, url: string, seconds: number, batch: number): Promise<Row> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--trace-gc-nvp', here, '--child', mode, '--url', url, '--seconds', String(seconds), '--batch', String(batch)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    proc.once('error', reject);
    proc.once('exit', (code) => {
      const line = /RESULT (\{.*\})/.exec(out);
      if (code !== 0 || !line) return reject(new Error(`redis-gc child (${mode}) exited with code ${code}`));
      const result = JSON.parse(line[1]) as ChildResult;
      const scavenges = out
        .split('\n')
        .filter((l) => l.includes(' gc=s '))
        .map((l) => ({ promoted: Number(/\bpromoted=(\d+)/.exec(l)?.[1] ?? NaN), pause: Number(/\bpause=([\d.]+)/.exec(l)?.[1] ?? NaN) }));
      const warm = scavenges.slice(Math.floor(scavenges.length / 2));
      resolve({
        mode,
        promotedKb: median(warm.map((s) => s.promoted)) / 1024,
        scavengeMs: median(warm.map((s) => s.pause)),
        gcMsPerSec: result.gcMs / result.seconds,
        cpuUsPerEntry: result.cpuUs / result.entries,
      });
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      url: { type: 'string' },
      seconds: { type: 'string', default: '6' },
      batch: { type: 'string', default: '60' },
      repeats: { type: 'string', default: '3' },
      out: { type: 'string' },
    },
  });
  const seconds = Number(values.seconds);
  const batch = Number(values.batch);
  if (values.child) return child(values.child as Mode, values.url!, seconds, batch);
  const redis = await startRedis();
  const rows: Row[] = [];
  try {
    console.log(`private Redis ${redis.version} on ${redis.url}; ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}`);
    for (let r = 0; r < Number(values.repeats); r++) {
      for (const mode of MODES) {
        const row = await runChild(mode, redis.url, seconds, batch);
        rows.push(row);
        console.log(`  repeat ${r + 1} ${mode}: ${row.promotedKb.toFixed(0)} KB promoted a scavenge, ${row.gcMsPerSec.toFixed(1)} ms of GC a second, ${row.cpuUsPerEntry.toFixed(2)} µs CPU an entry`);
      }
    }
  } finally {
    await redis.stop();
  }
  const lines = [
    `Batches of ${batch} \`XADD\`s every 5 ms on two loops, ${seconds} s per run, ${Number(values.repeats)} runs per mode (modes alternating), medians; ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}.`,
    '',
    '| mode | KB promoted a scavenge | scavenge pause ms | GC pauses ms/s | CPU µs an entry (whole process) |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...MODES.map((mode) => {
      const mine = rows.filter((row) => row.mode === mode);
      const m = (pick: (row: Row) => number, digits: number) => median(mine.map(pick)).toFixed(digits);
      return `| ${mode} | ${m((x) => x.promotedKb, 0)} | ${m((x) => x.scavengeMs, 2)} | ${m((x) => x.gcMsPerSec, 1)} | ${m((x) => x.cpuUsPerEntry, 2)} |`;
    }),
  ];
  console.log(`\n${lines.join('\n')}`);
  if (values.out) {
    const dir = path.resolve(path.dirname(here), '..', '..', values.out);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'redis-gc.md'), `# What each way of sending leaves to the garbage collector\n\n${lines.join('\n')}\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
