/**
 * `node dist/bench/decompose.js`: splits what a deferred route costs the request thread, step by step
 * (issue 12), on the routes of `src/server/decompose.app.ts`. The routes alternate within each round
 * (the order rotates), every round measures each for `--duration` s with autocannon on 127.0.0.1, and
 * each route's cost is taken against `plain` *in the same round* — adjacent in time, so that a host
 * whose speed drifts (this 2-core VM's does, by up to 2× within minutes) moves both alike. Prints the
 * median and quartiles of those per-round differences, in µs of the main thread's CPU per request
 * (Linux schedstat), and of the req/s ratios.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUTES = ['plain', 'param', 'scope', 'run-noop', 'run-timer', 'emit-timer', 'immediate-timer', 'close-timer'];

const USAGE = `Usage: node dist/bench/decompose.js [options]
  --adapter fastify|express  (default fastify)
  --routes ${ROUTES.join(',')}
                             the first is the baseline (default: all, plain first)
  --rounds 8                 rounds; each measures every route once
  --duration 3               seconds per route per round
  --connections 10
  --rate 0                   total req/s offered (0: as fast as the server answers)`;

interface Sample {
  cpuUs: number;
  reqPerSec: number;
}

function startServer(adapter: string): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(here, '..', 'server', 'decompose.app.js'), adapter], {
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
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return console.log(USAGE);
  const routes = values.routes.split(',').filter(Boolean);
  const unknown = routes.filter((r) => !ROUTES.includes(r));
  if (unknown.length > 0 || routes.length < 2) throw new Error(`--routes takes two or more of ${ROUTES.join(', ')}\n\n${USAGE}`);
  if (values.adapter !== 'fastify' && values.adapter !== 'express') throw new Error(`--adapter must be fastify or express\n\n${USAGE}`);
  const [rounds, duration, connections, rate] = [values.rounds, values.duration, values.connections, values.rate].map(Number);
  const { base, child } = await startServer(values.adapter);
  const drive = (route: string, seconds: number) =>
    autocannon({ url: `${base}/${route}`, connections, duration: seconds, pipelining: 1, ...(rate > 0 ? { overallRate: rate } : {}) });
  try {
    for (const route of routes) await drive(route, 2);
    const samples = new Map<string, Sample[]>(routes.map((r) => [r, []]));
    for (let round = 0; round < rounds; round++) {
      for (const route of routes.map((_, i) => routes[(i + round) % routes.length])) {
        const before = await mainCpuUs(base);
        const result = await drive(route, duration);
        // let the 5 ms effects end, so their CPU is counted with their route
        await new Promise((r) => setTimeout(r, 50));
        const after = await mainCpuUs(base);
        if (result.errors > 0 || result.non2xx > 0) throw new Error(`${route}: ${result.errors} errors, ${result.non2xx} non-2xx responses`);
        samples.get(route)!.push({ cpuUs: (after - before) / result.requests.total, reqPerSec: result.requests.total / result.duration });
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
  } finally {
    child.kill();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
