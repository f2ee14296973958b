/**
 * `node dist/bench/profile.js`: where a route's CPU goes. Two modes, both on 127.0.0.1,
 * each run bounded in time (autocannon `duration`):
 *
 * - `cpu` (default): CPU µs per request of each variant — the server's `process.cpuUsage()` delta over
 *   the requests it handled, drained (`?flush=1`) before and after — with the variants (and the
 *   builds given with `--server`) alternating within each repeat; prints medians and ratios.
 * - `profile`: one server per (build, adapter, scenario, variant) under `node --cpu-prof`; only the
 *   samples taken while autocannon drives the route are summed (self time per group of code and per
 *   function), and printed per request. It samples wall time: on a busy machine a preempted thread
 *   is charged to what it runs when it gets the core back.
 * - `perf`: the same, but Linux `perf record -e cpu-clock` samples the request (main) thread only
 *   while it runs, so its shares, scaled by the thread's measured CPU time, are µs of CPU per request
 *   — what each group of code costs the request thread (see `perf-summary.ts`). Needs `perf`
 *   (Debian's linux-perf) and permission to record the server's thread.
 *
 * `--server label=path/to/server/main.js` (repeatable) compares builds in one run, e.g. the library
 * before and after a change; the default is this build's server.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseCli } from 'node:util';
import autocannon from 'autocannon';
import { type CpuProfile, type FrameGroup, summariseProfile } from './cpuprofile-summary.js';
import { recordThread, runPerf } from './perf-record.js';
import { PerfMap, parsePerfScript, summarisePerf } from './perf-summary.js';
import { routeRequest, SQL_SCENARIOS } from './args.js';
import { startLogReceiver, startRedis } from './infra.js';
import { forkServer, type ServerHandle, snapshot } from './server-process.js';
import type { Adapter, ScenarioId, ServerConfig, Variant } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/** A fresh spool directory per server when the `deferred-spool` variant is measured; left in the OS temp dir. */
async function spoolDirFor(options: { variants: Variant[] }): Promise<string | undefined> {
  return options.variants.includes('deferred-spool') ? mkdtemp(path.join(os.tmpdir(), 'dw-profile-spool-')) : undefined;
}

const USAGE = `Usage: node dist/bench/profile.js [options]
  --mode cpu|profile|perf   cpu: CPU µs/request, variants alternating (default); profile: --cpu-prof summaries
                            (wall time); perf: the request thread's CPU by whose code spends it (Linux perf)
  --adapters express,fastify
  --scenarios sim5,mix      sim5, sim25, sim5-tail, mix, http-log (a log receiver in this process); bull-local, bullmq-local, redis-stream and realistic (a private redis-server is started; realistic also needs PostgreSQL)
  --variants plain,deferred,event-emitter
  --duration 5              seconds per measured run
  --warmup 2                seconds per route before measuring
  --repeats 5               measured runs per route (cpu mode)
  --connections 10
  --rate 0                  total req/s autocannon sends (0: as fast as the server answers). A fixed rate
                            below every variant's ceiling compares CPU per request at the same load, without the
                            per-loop-turn work that a slower variant spreads over fewer requests
  --server label=main.js    a server build to measure (repeatable; default: this build's)
  --out profiles            where profile mode writes .cpuprofile files and summary.json, perf mode perf-summary.json
  --top 25                  functions listed per profile`;

interface Options {
  mode: 'cpu' | 'profile' | 'perf';
  /** The private Redis of the queue scenarios (set by `main`). */
  redisUrl?: string;
  /** The log receiver of `http-log` (set by `main`). */
  logReceiverUrl?: string;
  adapters: Adapter[];
  scenarios: ScenarioId[];
  variants: Variant[];
  duration: number;
  warmup: number;
  repeats: number;
  connections: number;
  /** autocannon's `overallRate` in cpu mode; 0 = unbounded. */
  rate: number;
  servers: Array<{ label: string; entry: string }>;
  out: string;
  top: number;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseCli({
    args: argv,
    options: {
      mode: { type: 'string', default: 'cpu' },
      adapters: { type: 'string', default: 'express,fastify' },
      scenarios: { type: 'string', default: 'sim5,mix' },
      variants: { type: 'string', default: 'plain,deferred,event-emitter' },
      duration: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '2' },
      repeats: { type: 'string', default: '5' },
      connections: { type: 'string', default: '10' },
      rate: { type: 'string', default: '0' },
      server: { type: 'string', multiple: true },
      out: { type: 'string', default: 'profiles' },
      top: { type: 'string', default: '25' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);
  const count = (s: string, name: string, min: number) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < min || n > 1_000_000) throw new Error(`--${name} must be an integer from ${min} to 1000000\n\n${USAGE}`);
    return n;
  };
  if (values.mode !== 'cpu' && values.mode !== 'profile' && values.mode !== 'perf') throw new Error(`--mode must be cpu, profile or perf\n\n${USAGE}`);
  const servers = (values.server ?? [`this=${path.resolve(here, '..', 'server', 'main.js')}`]).map((spec) => {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new Error(`--server takes label=path, got "${spec}"`);
    return { label: spec.slice(0, eq), entry: path.resolve(spec.slice(eq + 1)) };
  });
  return {
    mode: values.mode,
    adapters: list(values.adapters) as Adapter[],
    scenarios: list(values.scenarios) as ScenarioId[],
    variants: list(values.variants) as Variant[],
    duration: count(values.duration, 'duration', 1),
    warmup: count(values.warmup, 'warmup', 0),
    repeats: count(values.repeats, 'repeats', 1),
    connections: count(values.connections, 'connections', 1),
    rate: count(values.rate, 'rate', 0),
    servers,
    out: path.resolve(values.out),
    top: count(values.top, 'top', 0),
  };
}

/** Drives `url` (`<base>/<scenario>/<variant>`) as the scenario's requests are sent (`routeRequest`: GET, or `realistic`'s POST). */
async function drive(url: string, duration: number, connections: number, rate = 0): Promise<autocannon.Result> {
  const request = routeRequest(new URL(url).pathname.split('/')[1] as ScenarioId);
  const result = await autocannon({ url, connections, duration, pipelining: 1, timeout: 10, ...request, ...(rate > 0 ? { overallRate: rate } : {}) });
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx responses`);
  return result;
}

interface CpuRun {
  cpuUsPerRequest: number;
  /** The main (request) thread's own CPU µs per request (Linux schedstat); NaN elsewhere. */
  mainUsPerRequest: number;
  /** The sink worker threads' CPU µs per request (`deferred-offload`); 0 elsewhere. */
  workerUsPerRequest: number;
  reqPerSec: number;
  /** The event loop's delay over the run and its drain, 99th percentile, ms (NaN from a server without it). */
  loopDelayP99Ms: number;
  /** autocannon's 99th percentile of the response time, ms. */
  p99Ms: number;
  /** Garbage-collection pauses over the run and its drain: ms per second of the run, and the longest (NaN from a server without it). */
  gcMsPerSec: number;
  gcMaxMs: number;
  /** Full (mark-compact) collections per second of the run. */
  majorGcPerSec: number;
}

/** One measured run: the server's CPU over the requests it handled, drained before and after. */
async function measureCpu(server: ServerHandle, key: string, options: Options): Promise<CpuRun> {
  const before = await snapshot(server, true);
  const result = await drive(`${server.base}/${key}`, options.duration, options.connections, options.rate);
  const after = await snapshot(server, true);
  const handled = (after.handled[key] ?? 0) - (before.handled[key] ?? 0);
  const cpuUs = after.cpu.user + after.cpu.system - (before.cpu.user + before.cpu.system);
  const mainMs = after.mainThreadCpuMs !== undefined && before.mainThreadCpuMs !== undefined ? after.mainThreadCpuMs - before.mainThreadCpuMs : NaN;
  return {
    cpuUsPerRequest: cpuUs / handled,
    mainUsPerRequest: (mainMs * 1000) / handled,
    workerUsPerRequest: ((after.workerActiveMs - before.workerActiveMs) * 1000) / handled,
    reqPerSec: result.requests.total / result.duration,
    loopDelayP99Ms: after.loopDelay?.p99Ms ?? NaN,
    p99Ms: result.latency.p99,
    gcMsPerSec: after.gc ? after.gc.totalMs / result.duration : NaN,
    gcMaxMs: after.gc?.maxMs ?? NaN,
    majorGcPerSec: after.gc ? after.gc.majorCount / result.duration : NaN,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fixed = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '–');

async function cpuMode(options: Options): Promise<void> {
  for (const adapter of options.adapters) {
    // one after another: builds given the same queue scenario share its queue, which each server empties as it starts
    const servers: Array<(typeof options.servers)[number] & { server: ServerHandle }> = [];
    for (const s of options.servers) {
      const config = { adapter, scenarios: options.scenarios, spoolDir: await spoolDirFor(options), redisUrl: options.redisUrl, logReceiverUrl: options.logReceiverUrl, pgUrl: PG_URL };
      servers.push({ ...s, server: await forkServer(s.entry, config, [], s.entry) });
    }
    try {
      const runs = new Map<string, CpuRun[]>();
      const id = (label: string, scenario: string, variant: string) => `${label}|${scenario}|${variant}`;
      for (const scenario of options.scenarios) {
        for (const variant of options.variants) {
          for (const s of servers) if (options.warmup > 0) await drive(`${s.server.base}/${scenario}/${variant}`, options.warmup, options.connections);
        }
      }
      for (let r = 0; r < options.repeats; r++) {
        for (const scenario of options.scenarios) {
          // rotate the order each repeat, so no route always runs first
          const order = options.variants.flatMap((variant) => servers.map((s) => ({ variant, s })));
          const rotated = order.map((_, i) => order[(i + r) % order.length]);
          for (const { variant, s } of rotated) {
            const run = await measureCpu(s.server, `${scenario}/${variant}`, options);
            const k = id(s.label, scenario, variant);
            runs.set(k, [...(runs.get(k) ?? []), run]);
          }
        }
        process.stdout.write(`${adapter}: repeat ${r + 1}/${options.repeats} done\n`);
      }
      const rate = options.rate > 0 ? `, ${options.rate} req/s offered` : '';
      console.log(`\n${adapter}, ${options.duration} s × ${options.repeats} repeats, ${options.connections} connections${rate} (medians)`);
      console.log(
        '| scenario | build | variant | CPU µs/req | request-thread µs/req | worker µs/req | req/s | CPU ÷ plain | request-thread − plain µs | CPU ÷ event-emitter | req/s ÷ plain | req/s ÷ event-emitter | request-thread − event-emitter µs | loop delay p99 ms | p99 ms | gc ms/s | longest gc ms | full gcs/s |',
      );
      console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const scenario of options.scenarios) {
        for (const s of servers) {
          const med = (variant: string, pick: (run: CpuRun) => number) => median((runs.get(id(s.label, scenario, variant)) ?? []).map(pick));
          for (const variant of options.variants) {
            const cpu = med(variant, (x) => x.cpuUsPerRequest);
            const rps = med(variant, (x) => x.reqPerSec);
            const main = med(variant, (x) => x.mainUsPerRequest);
            const cells = [
              scenario,
              s.label,
              variant,
              fixed(cpu),
              fixed(main),
              fixed(med(variant, (x) => x.workerUsPerRequest)),
              fixed(rps, 0),
              fixed(cpu / med('plain', (x) => x.cpuUsPerRequest), 2),
              fixed(main - med('plain', (x) => x.mainUsPerRequest)),
              fixed(cpu / med('event-emitter', (x) => x.cpuUsPerRequest), 2),
              fixed(rps / med('plain', (x) => x.reqPerSec), 2),
              fixed(rps / med('event-emitter', (x) => x.reqPerSec), 2),
              fixed(main - med('event-emitter', (x) => x.mainUsPerRequest)),
              fixed(med(variant, (x) => x.loopDelayP99Ms), 2),
              fixed(med(variant, (x) => x.p99Ms), 1),
              fixed(med(variant, (x) => x.gcMsPerSec), 1),
              fixed(med(variant, (x) => x.gcMaxMs), 2),
              fixed(med(variant, (x) => x.majorGcPerSec), 2),
            ];
            console.log(`| ${cells.join(' | ')} |`);
          }
        }
      }
    } finally {
      await Promise.all(servers.map((s) => s.server.stop()));
    }
  }
}

/** One measured route: each (adapter, scenario, variant, server build) in turn, its own server each. */
interface RouteRun {
  name: string;
  entry: string;
  key: string;
  config: ServerConfig;
}

async function* routeRuns(options: Options): AsyncGenerator<RouteRun> {
  for (const adapter of options.adapters) {
    for (const scenario of options.scenarios) {
      for (const variant of options.variants) {
        for (const s of options.servers) {
          const config = { adapter, scenarios: [scenario], spoolDir: await spoolDirFor(options), redisUrl: options.redisUrl, logReceiverUrl: options.logReceiverUrl, pgUrl: PG_URL };
          yield { name: `${s.label}-${adapter}-${scenario}-${variant}`, entry: s.entry, key: `${scenario}/${variant}`, config };
        }
      }
    }
  }
}

async function profileMode(options: Options): Promise<void> {
  await mkdir(options.out, { recursive: true });
  const summaries: Record<string, unknown> = {};
  for await (const { name, entry, key, config } of routeRuns(options)) {
    const dir = path.join(options.out, name);
    await rm(dir, { recursive: true, force: true });
    const server = await forkServer(entry, config, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100'], entry);
    let window: [number, number];
    let handled: number;
    try {
      if (options.warmup > 0) await drive(`${server.base}/${key}`, options.warmup, options.connections);
      const before = await snapshot(server, true);
      const from = Number(process.hrtime.bigint() / 1000n);
      await drive(`${server.base}/${key}`, options.duration, options.connections, options.rate);
      const to = Number(process.hrtime.bigint() / 1000n);
      const after = await snapshot(server, true);
      window = [from, to];
      handled = (after.handled[key] ?? 0) - (before.handled[key] ?? 0);
    } finally {
      await server.stop();
    }
    // The main thread's profile (thread id 0 in Node's file name); a sink worker writes its own.
    const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
    const file = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0];
    if (!file) throw new Error(`no .cpuprofile in ${dir}`);
    const summary = summariseProfile(JSON.parse(await readFile(path.join(dir, file), 'utf8')) as CpuProfile, ...window);
    const perReq = (us: number) => us / handled;
    const busy = summary.windowUs - summary.groups.idle;
    console.log(`\n## ${name}: ${handled} requests, ${fixed(perReq(busy))} µs busy/request (sampled)`);
    console.log('| group | self µs/req | share of busy | inclusive µs/req |');
    console.log('| --- | ---: | ---: | ---: |');
    for (const [group, us] of Object.entries(summary.groups).sort((a, b) => b[1] - a[1]) as Array<[FrameGroup, number]>) {
      if (group === 'idle' || us === 0) continue;
      console.log(`| ${group} | ${fixed(perReq(us), 2)} | ${fixed((100 * us) / busy)}% | ${fixed(perReq(summary.groupsInclusive[group]), 2)} |`);
    }
    const top = summary.functions.filter((f) => f.group !== 'idle').slice(0, options.top);
    console.log('\n| function | where | group | self µs/req | total µs/req |');
    console.log('| --- | --- | --- | ---: | ---: |');
    for (const f of top) console.log(`| ${f.name} | ${f.where} | ${f.group} | ${fixed(perReq(f.selfUs), 2)} | ${fixed(perReq(f.totalUs), 2)} |`);
    const ours = summary.functions.filter((f) => f.group === 'deferred-work');
    if (ours.length > 0) {
      console.log('\nthis library, by total (inclusive) time:');
      for (const f of [...ours].sort((a, b) => b.totalUs - a.totalUs).slice(0, options.top)) {
        console.log(`  ${f.name} (${f.where}): self ${fixed(perReq(f.selfUs), 2)}, total ${fixed(perReq(f.totalUs), 2)} µs/req`);
      }
    }
    summaries[name] = { handled, busyUsPerRequest: perReq(busy), groups: summary.groups, groupsInclusive: summary.groupsInclusive, functions: summary.functions.slice(0, 200) };
  }
  await writeFile(path.join(options.out, 'summary.json'), `${JSON.stringify(summaries, null, 1)}\n`);
}

async function perfMode(options: Options): Promise<void> {
  await mkdir(options.out, { recursive: true });
  const summaries: Record<string, unknown> = {};
  for await (const { name, entry, key, config } of routeRuns(options)) {
    const file = path.join(options.out, `${name}.perf.data`);
    const server = await forkServer(entry, config, ['--perf-basic-prof-only-functions'], entry);
    let handled: number;
    let mainUs: number;
    let workerUs: number;
    let reqPerSec: number;
    try {
      if (options.warmup > 0) await drive(`${server.base}/${key}`, options.warmup, options.connections, options.rate);
      const before = await snapshot(server, true);
      // the main thread's id is the process id
      const recording = await recordThread(server.child.pid!, file);
      let result: autocannon.Result;
      try {
        result = await drive(`${server.base}/${key}`, options.duration, options.connections, options.rate);
      } finally {
        await recording.stop();
      }
      const after = await snapshot(server, true);
      handled = (after.handled[key] ?? 0) - (before.handled[key] ?? 0);
      if (after.mainThreadCpuMs === undefined || before.mainThreadCpuMs === undefined) throw new Error('the server cannot read its thread CPU time (Linux only)');
      mainUs = ((after.mainThreadCpuMs - before.mainThreadCpuMs) * 1000) / handled;
      workerUs = ((after.workerActiveMs - before.workerActiveMs) * 1000) / handled;
      reqPerSec = result.requests.total / result.duration;
    } finally {
      await server.stop();
    }
    const mapFile = `/tmp/perf-${server.child.pid}.map`;
    const map = new PerfMap(await readFile(mapFile, 'utf8'));
    const summary = summarisePerf(parsePerfScript(await runPerf(['script', '-i', file, '-F', 'ip,sym,dso']), map));
    // the samples cover the run (and the flush after it); their shares scale the thread's measured CPU
    const us = (n: number) => (n / summary.samples) * mainUs;
    const rate = options.rate > 0 ? `${options.rate} req/s offered, ` : '';
    console.log(`\n## ${name}: ${handled} requests (${rate}${fixed(reqPerSec, 0)} req/s), request thread ${fixed(mainUs)} µs CPU/request, sink workers ${fixed(workerUs)}; ${summary.samples} samples`);
    console.log('| owner (leaf-most JavaScript frame) | µs CPU/req | of which in the kernel | share | inclusive µs/req |');
    console.log('| --- | ---: | ---: | ---: | ---: |');
    for (const [owner, n] of Object.entries(summary.owners).sort((a, b) => b[1] - a[1])) {
      console.log(`| ${owner} | ${fixed(us(n), 2)} | ${fixed(us(summary.kernel[owner] ?? 0), 2)} | ${fixed((100 * n) / summary.samples)}% | ${fixed(us(summary.inclusive[owner] ?? n), 2)} |`);
    }
    const ours = summary.functions.filter((f) => f.group === 'deferred-work').slice(0, options.top);
    if (ours.length > 0) {
      console.log('\nthis library, by inclusive CPU µs/request (self: as the leaf-most JavaScript frame):');
      for (const f of ours) console.log(`  ${fixed(us(f.inclusive), 2)}  self ${fixed(us(f.self), 2)}  ${f.name} (${f.where})`);
    }
    summaries[name] = {
      handled,
      reqPerSec,
      requestThreadCpuUsPerRequest: mainUs,
      workerCpuUsPerRequest: workerUs,
      ownersUsPerRequest: Object.fromEntries(Object.entries(summary.owners).map(([k, n]) => [k, us(n)])),
      kernelUsPerRequest: Object.fromEntries(Object.entries(summary.kernel).map(([k, n]) => [k, us(n)])),
      inclusiveUsPerRequest: Object.fromEntries(Object.entries(summary.inclusive).map(([k, n]) => [k, us(n)])),
      functions: summary.functions.slice(0, 200).map((f) => ({ ...f, inclusiveUsPerRequest: us(f.inclusive), selfUsPerRequest: us(f.self) })),
    };
    await rm(file, { force: true });
    await rm(mapFile, { force: true });
  }
  await writeFile(path.join(options.out, 'perf-summary.json'), `${JSON.stringify(summaries, null, 1)}\n`);
}

/** The `realistic` scenario's database (the machine's own PostgreSQL, or `DW_BENCH_PG_URL`). */
const PG_URL = SQL_SCENARIOS['pg-local']?.url;

/** The queue and stream scenarios need a Redis: a private one, started for the run. */
const REDIS_SCENARIOS: readonly ScenarioId[] = ['bull-local', 'bullmq-local', 'realistic', 'redis-stream'];

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const unsupported = options.scenarios.filter((s) => !['sim5', 'sim25', 'sim5-tail', 'mix', 'http-log', ...REDIS_SCENARIOS].includes(s));
  if (unsupported.length > 0) throw new Error(`profile.js cannot run ${unsupported.join(', ')} (it starts no proxy or broker)\n\n${USAGE}`);
  const redis = options.scenarios.some((s) => REDIS_SCENARIOS.includes(s)) ? await startRedis() : undefined;
  // http-log's destination: a receiver in this process, as in `pnpm bench`
  const receiver = options.scenarios.includes('http-log') ? await startLogReceiver() : undefined;
  try {
    const withServices = { ...options, redisUrl: redis?.url, logReceiverUrl: receiver?.url };
    if (options.mode === 'cpu') await cpuMode(withServices);
    else if (options.mode === 'perf') await perfMode(withServices);
    else await profileMode(withServices);
  } finally {
    await Promise.allSettled([redis?.stop(), receiver?.close()]);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
