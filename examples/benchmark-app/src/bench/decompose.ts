/**
 * `node dist/bench/decompose.js`: splits what a deferred route costs the request thread, step by step
 * on the routes of `src/server/decompose.app.ts`. The routes alternate within each round
 * (the order rotates), every round measures each for `--duration` s with autocannon on 127.0.0.1, and
 * each route's cost is taken against `plain` *in the same round* — adjacent in time, so that a host
 * whose speed drifts (this 2-core VM's does, by up to 2× within minutes) moves both alike. Prints the
 * median and quartiles of those per-round differences, in µs of the main thread's CPU per request
 * (Linux schedstat), and of the req/s ratios. With `--perf`, each measurement is also recorded with
 * Linux `perf` (see `perf-summary.ts`) and a second table splits each route's request-thread CPU by
 * whose code spent it (mean µs/request over the rounds), next to the baseline's — which of the
 * differences are the library's own frames, and which are shared code that ran slower.
 *
 * With `--metrics`, it compares instead each route with the library's own metrics off and on
 * (`DeferredWorkMetricsModule`, prom-client, scraped every second during the "on" runs): two servers,
 * the off and on measurements of a route adjacent in each round (their order alternating), and the
 * table gives on − off per route.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import autocannon from 'autocannon';
import { recordThread, runPerf } from './perf-record.js';
import { PerfMap, parsePerfScript, summarisePerf } from './perf-summary.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUTES = ['plain', 'param', 'scope', 'run-noop', 'run-timer', 'job', 'mix', 'emit-mix', 'three', 'emit-three', 'close-three', 'emit-timer', 'immediate-timer', 'close-timer'];

const USAGE = `Usage: node dist/bench/decompose.js [options]
  --adapter fastify|express  (default fastify)
  --routes ${ROUTES.join(',')}
                             the first is the baseline (default: all, plain first)
  --rounds 8                 rounds; each measures every route once
  --duration 3               seconds per route per round
  --connections 10
  --rate 0                   total req/s offered (0: as fast as the server answers)
  --perf                     also split each route's CPU by whose code spent it (Linux perf; Debian's linux-perf)
  --metrics                  compare each route with the library's own metrics off and on (two servers;
                             "on" scraped every second) instead of against the first route
  --lag                      with --metrics: "on" also records the delivery lag (opt-in)`;

interface Sample {
  cpuUs: number;
  reqPerSec: number;
  /** With `--perf`: µs of request-thread CPU per request, by owner (they add up to `cpuUs`). */
  owners?: Record<string, number>;
}

function startServer(adapter: string, perf: boolean, metrics: false | 'metrics' | 'metrics-lag' = false): Promise<{ base: string; child: ChildProcess }> {
  const flags = perf ? ['--perf-basic-prof-only-functions'] : [];
  const child = spawn(process.execPath, [...flags, path.join(here, '..', 'server', 'decompose.app.js'), adapter, ...(metrics ? [metrics] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the decompose server exited (code ${code}) before it listened`)));
    child.stdout!.once('data', (chunk: Buffer) => resolve({ base: `http://127.0.0.1:${(JSON.parse(chunk.toString()) as { port: number }).port}`, child }));
  });
}

async function mainCpuUs(base: string): Promise<number> {
  const response = await fetch(`${base}/__cpu`);
  return ((await response.json()) as { mainCpuUs: number }).mainCpuUs;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      adapter: { type: 'string', default: 'fastify' },
      routes: { type: 'string', default: ROUTES.join(',') },
      rounds: { type: 'string', default: '8' },
      duration: { type: 'string', default: '3' },
      connections: { type: 'string', default: '10' },
      rate: { type: 'string', default: '0' },
      perf: { type: 'boolean', default: false },
      metrics: { type: 'boolean', default: false },
      lag: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return console.log(USAGE);
  const routes = values.routes.split(',').filter(Boolean);
  const unknown = routes.filter((r) => !ROUTES.includes(r));
  if (unknown.length > 0 || routes.length < 2) throw new Error(`--routes takes two or more of ${ROUTES.join(', ')}\n\n${USAGE}`);
  if (values.adapter !== 'fastify' && values.adapter !== 'express') throw new Error(`--adapter must be fastify or express\n\n${USAGE}`);
  const [rounds, duration, connections, rate] = [values.rounds, values.duration, values.connections, values.rate].map(Number);
  if (values.metrics) return compareMetrics(values.adapter, routes, { rounds, duration, connections, rate, lag: values.lag });
  const { base, child } = await startServer(values.adapter, values.perf);
  const perfFile = path.join(tmpdir(), `decompose-${process.pid}.perf.data`);
  /** The request thread's CPU of one measurement by owner, scaled to `cpuUs` per request. */
  const owners = async (cpuUs: number): Promise<Record<string, number>> => {
    const map = new PerfMap(await readFile(`/tmp/perf-${child.pid}.map`, 'utf8'));
    const summary = summarisePerf(parsePerfScript(await runPerf(['script', '-i', perfFile, '-F', 'ip,sym,dso']), map));
    return Object.fromEntries(Object.entries(summary.owners).map(([owner, n]) => [owner, (n / summary.samples) * cpuUs]));
  };
  const drive = (route: string, seconds: number) =>
    autocannon({ url: `${base}/${route}`, connections, duration: seconds, pipelining: 1, ...(rate > 0 ? { overallRate: rate } : {}) });
  try {
    for (const route of routes) await drive(route, 2);
    const samples = new Map<string, Sample[]>(routes.map((r) => [r, []]));
    for (let round = 0; round < rounds; round++) {
      for (const route of routes.map((_, i) => routes[(i + round) % routes.length])) {
        const before = await mainCpuUs(base);
        // the main thread's id is the process id
        const recording = values.perf ? await recordThread(child.pid!, perfFile) : undefined;
        let result: autocannon.Result;
        try {
          result = await drive(route, duration);
          // let the 5 ms effects end, so their CPU is counted with their route
          await new Promise((r) => setTimeout(r, 50));
        } finally {
          await recording?.stop();
        }
        const after = await mainCpuUs(base);
        if (result.errors > 0 || result.non2xx > 0) throw new Error(`${route}: ${result.errors} errors, ${result.non2xx} non-2xx responses`);
        const cpuUs = (after - before) / result.requests.total;
        samples.get(route)!.push({ cpuUs, reqPerSec: result.requests.total / result.duration, owners: recording ? await owners(cpuUs) : undefined });
      }
      process.stderr.write(`round ${round + 1}/${rounds}\n`);
    }
    const baseline = samples.get(routes[0])!;
    const rate_ = rate > 0 ? `, ${rate} req/s offered` : ', as fast as the server answers';
    console.log(`\n${values.adapter}: ${rounds} rounds × ${duration} s per route, ${connections} connections${rate_}; differences to ${routes[0]} within each round`);
    console.log(`| route | CPU µs/req (median) | − ${routes[0]} µs: median | q1 | q3 | req/s ÷ ${routes[0]}: median | q1 | q3 |`);
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const route of routes) {
      const s = samples.get(route)!;
      const diff = s.map((x, i) => x.cpuUs - baseline[i].cpuUs);
      const ratio = s.map((x, i) => x.reqPerSec / baseline[i].reqPerSec);
      const f = (n: number, d = 1) => n.toFixed(d);
      console.log(
        `| ${route} | ${f(quantile(s.map((x) => x.cpuUs), 0.5))} | ${f(quantile(diff, 0.5))} | ${f(quantile(diff, 0.25))} | ${f(quantile(diff, 0.75))} | ${f(quantile(ratio, 0.5), 2)} | ${f(quantile(ratio, 0.25), 2)} | ${f(quantile(ratio, 0.75), 2)} |`,
      );
    }
    if (values.perf) printOwners(routes, samples);
  } finally {
    child.kill();
    await rm(perfFile, { force: true });
    await rm(`/tmp/perf-${child.pid}.map`, { force: true });
  }
}

/**
 * `--metrics`: each route on a server without and one with the library's own metrics, the two
 * measurements adjacent in each round (order alternating by round); "on" is scraped every second.
 */
async function compareMetrics(adapter: string, routes: string[], o: { rounds: number; duration: number; connections: number; rate: number; lag: boolean }): Promise<void> {
  const off = await startServer(adapter, false);
  const on = await startServer(adapter, false, o.lag ? 'metrics-lag' : 'metrics');
  const measure = async (base: string, route: string, scrape: boolean): Promise<Sample> => {
    const before = await mainCpuUs(base);
    const scraper = scrape ? setInterval(() => void fetch(`${base}/metrics`).then((r) => r.text()), 1000) : undefined;
    let result: autocannon.Result;
    try {
      result = await autocannon({ url: `${base}/${route}`, connections: o.connections, duration: o.duration, pipelining: 1, ...(o.rate > 0 ? { overallRate: o.rate } : {}) });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      clearInterval(scraper);
    }
    const after = await mainCpuUs(base);
    if (result.errors > 0 || result.non2xx > 0) throw new Error(`${route}: ${result.errors} errors, ${result.non2xx} non-2xx responses`);
    return { cpuUs: (after - before) / result.requests.total, reqPerSec: result.requests.total / result.duration };
  };
  try {
    for (const route of routes) for (const server of [off, on]) await autocannon({ url: `${server.base}/${route}`, connections: o.connections, duration: 2 });
    const samples = new Map(routes.map((r) => [r, { off: [] as Sample[], on: [] as Sample[] }]));
    for (let round = 0; round < o.rounds; round++) {
      for (const route of routes) {
        const s = samples.get(route)!;
        const order = round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
        for (const which of order) s[which].push(await measure(which === 'on' ? on.base : off.base, route, which === 'on'));
      }
      process.stderr.write(`round ${round + 1}/${o.rounds}\n`);
    }
    const rate_ = o.rate > 0 ? `, ${o.rate} req/s offered` : ', as fast as the server answers';
    console.log(`\n${adapter}: ${o.rounds} rounds × ${o.duration} s per route and server, ${o.connections} connections${rate_}; metrics on${o.lag ? ' (with the delivery lag)' : ''} − off within each round`);
    console.log('| route | CPU µs/req off (median) | on (median) | on − off µs: median | q1 | q3 | req/s on ÷ off: median | q1 | q3 |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    const f = (n: number, d = 1) => n.toFixed(d);
    for (const route of routes) {
      const s = samples.get(route)!;
      const diff = s.on.map((x, i) => x.cpuUs - s.off[i].cpuUs);
      const ratio = s.on.map((x, i) => x.reqPerSec / s.off[i].reqPerSec);
      const median = (xs: Sample[]) => quantile(xs.map((x) => x.cpuUs), 0.5);
      console.log(
        `| ${route} | ${f(median(s.off))} | ${f(median(s.on))} | ${f(quantile(diff, 0.5))} | ${f(quantile(diff, 0.25))} | ${f(quantile(diff, 0.75))} | ${f(quantile(ratio, 0.5), 2)} | ${f(quantile(ratio, 0.25), 2)} | ${f(quantile(ratio, 0.75), 2)} |`,
      );
    }
  } finally {
    off.child.kill();
    on.child.kill();
  }
}

/** Mean µs/request per owner and route over the rounds (owners as columns, largest first), then each route's difference to the baseline. */
function printOwners(routes: string[], samples: Map<string, Sample[]>): void {
  const mean = new Map<string, Record<string, number>>();
  for (const route of routes) {
    const all = samples.get(route)!;
    const sum: Record<string, number> = {};
    for (const s of all) for (const [owner, us] of Object.entries(s.owners ?? {})) sum[owner] = (sum[owner] ?? 0) + us / all.length;
    mean.set(route, sum);
  }
  const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  const base = mean.get(routes[0])!;
  const columns = [...new Set(routes.flatMap((r) => Object.keys(mean.get(r)!)))].sort((a, b) => (base[b] ?? 0) - (base[a] ?? 0));
  console.log(`\nrequest-thread CPU by whose code spent it (perf, leaf-most JavaScript frame), mean µs/request over the rounds; below each route its difference to ${routes[0]}`);
  console.log(`| route | total | ${columns.join(' | ')} |`);
  console.log(`| --- | ---: | ${columns.map(() => '---:').join(' | ')} |`);
  for (const route of routes) {
    const m = mean.get(route)!;
    console.log(`| ${route} | ${total(m).toFixed(1)} | ${columns.map((c) => (m[c] ?? 0).toFixed(2)).join(' | ')} |`);
    if (route === routes[0]) continue;
    const d = (c: string) => (m[c] ?? 0) - (base[c] ?? 0);
    console.log(`| − ${routes[0]} | ${(total(m) - total(base)).toFixed(1)} | ${columns.map((c) => `${d(c) >= 0 ? '+' : ''}${d(c).toFixed(2)}`).join(' | ')} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
