/**
 * The least any after-response batch of Redis Stream entries can cost, without Nest and without this
 * library: bare Express and bare Fastify servers, each with four routes writing an entry like the
 * `redis-stream` scenario's (the sink's default fields, about 250 bytes) to a private Redis:
 *
 * - `plain`: no entry;
 * - `blocking`: one awaited `XADD`, then the response;
 * - `close-batch`: a hand-written `close` listener on the Node response pushes the entry to an array,
 *   and one ioredis pipeline writes the array 5 ms after its first entry (the library's default
 *   `flushIntervalMs`): what an after-response mechanism does at the least, with no accounting,
 *   retries, bounds or drain;
 * - `request-batch`: the same batch, the entry pushed during the request (no listener; not after the
 *   response), to show what the listener itself costs.
 *
 * Rounds rotate the routes' order; ratios are paired within each round (medians printed), and each
 * run counts the entries its stream received against the requests answered (10 more a round than
 * autocannon's count: the requests in flight when it stops).
 *
 *   node dist/bench/after-response-floor.js [--adapters express,fastify] [--rounds 7] [--duration 2]
 *                                           [--connections 10] [--out results/runs/<folder>]
 *
 * Writes `after-response-floor.json` and `.md` to `--out` (relative to examples/benchmark-app) when given.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { flagValue } from './args.js';
import { startRedis } from './infra.js';
import { median } from './report.js';
import { forkServer } from './server-process.js';
import type { Adapter, ServerConfig } from './types.js';

const ROUTES = ['plain', 'blocking', 'close-batch', 'request-batch'] as const;
type Route = (typeof ROUTES)[number];

/** What the server reports: its CPU so far (the runner counts the entries with `XLEN`). */
interface ServerCounters {
  cpuUs: number;
}

interface RunSample {
  route: Route;
  reqPerSec: number;
  cpuUsPerRequest: number;
  requests: number;
  entries: number;
}

const LINGER_MS = 5;
const FIELDS = { orderId: 'o-1', customer: 'c-42', total: 99.5, currency: 'EUR', lines: 3, channel: 'web', payment: 'card', shipping: { method: 'standard', country: 'DE' } };
const OK = { ok: true, message: 'order accepted' };

// ---- the server (a child process per adapter) ----

async function serve({ adapter, redisUrl }: ServerConfig): Promise<void> {
  const redis = new Redis(redisUrl!);
  let seq = 0;
  const entry = (): string[] => ['id', `e-${++seq}`, 'kind', 'log', 'name', 'info', 'payload', JSON.stringify({ message: 'order accepted', fields: FIELDS }), 'createdAt', String(Date.now())];
  const batches = new Map<string, { entries: string[][]; timer?: NodeJS.Timeout }>();
  const later = (stream: string, fields: string[]) => {
    let batch = batches.get(stream);
    if (!batch) batches.set(stream, (batch = { entries: [] }));
    batch.entries.push(fields);
    batch.timer ??= setTimeout(() => {
      const entries = batch.entries;
      batch.entries = [];
      batch.timer = undefined;
      const pipeline = redis.pipeline();
      for (const e of entries) pipeline.xadd(stream, '*', ...e);
      pipeline.exec().catch((error: unknown) => console.error('pipeline failed:', error));
    }, LINGER_MS);
  };
  const handlers: Record<Route, (response: NodeJS.EventEmitter) => Promise<void> | void> = {
    plain: () => undefined,
    blocking: async () => {
      await redis.xadd('floor:blocking', '*', ...entry());
    },
    'close-batch': (response) => {
      response.once('close', () => later('floor:close-batch', entry()));
    },
    'request-batch': () => later('floor:request-batch', entry()),
  };
  const counters = (): ServerCounters => {
    const usage = process.cpuUsage();
    return { cpuUs: usage.user + usage.system };
  };
  let port: number;
  if (adapter === 'express') {
    const { default: express } = await import('express');
    const app = express();
    for (const route of ROUTES) {
      const handle = handlers[route];
      app.get(`/${route}`, async (_req, res) => {
        await handle(res);
        res.json(OK);
      });
    }
    app.get('/__counters', (_req, res) => {
      res.json(counters());
    });
    port = await new Promise<number>((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });
  } else {
    const { default: Fastify } = await import('fastify');
    const app = Fastify();
    for (const route of ROUTES) {
      const handle = handlers[route];
      app.get(`/${route}`, async (_request, reply) => {
        await handle(reply.raw);
        return OK;
      });
    }
    app.get('/__counters', async () => counters());
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  }
  // the benchmark server's protocol (server-process.ts): `ready` with the port, then `stop`
  process.send!({ type: 'ready', port });
  const stop = () => {
    redis.disconnect();
    process.exit(0);
  };
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'stop') stop();
  });
  process.on('disconnect', stop);
}

// ---- the runner ----

async function measure(adapter: Adapter, redisUrl: string, rounds: number, duration: number, connections: number): Promise<RunSample[][]> {
  const server = await forkServer(fileURLToPath(import.meta.url), { adapter, scenarios: ['redis-stream'], redisUrl }, [], `the bare ${adapter} server`);
  const base = server.base;
  const redis = new Redis(redisUrl);
  const counters = async () => (await (await fetch(`${base}/__counters`)).json()) as ServerCounters;
  const entriesIn = async (route: Route) => (route === 'plain' ? 0 : await redis.xlen(`floor:${route}`));
  const load = (route: Route, seconds: number) => autocannon({ url: `${base}/${route}`, connections, duration: seconds, pipelining: 1 });
  try {
    for (const route of ROUTES) await load(route, 2);
    const byRound: RunSample[][] = [];
    for (let round = 0; round < rounds; round++) {
      const order = [...ROUTES.slice(round % ROUTES.length), ...ROUTES.slice(0, round % ROUTES.length)];
      const samples: RunSample[] = [];
      for (const route of order) {
        const entriesBefore = await entriesIn(route);
        const before = await counters();
        const result = await load(route, duration);
        const after = await counters();
        await new Promise((resolve) => setTimeout(resolve, 4 * LINGER_MS + 50));
        const requests = result.requests.total;
        samples.push({
          route,
          reqPerSec: requests / duration,
          // the counters request itself is in the window too: one request among thousands
          cpuUsPerRequest: (after.cpuUs - before.cpuUs) / requests,
          requests,
          entries: (await entriesIn(route)) - entriesBefore,
        });
      }
      byRound.push(samples);
      process.stderr.write(`${adapter}: round ${round + 1}/${rounds}\n`);
    }
    return byRound;
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

function table(adapter: Adapter, byRound: RunSample[][]): string {
  const of = (round: RunSample[], route: Route) => round.find((s) => s.route === route)!;
  const lines = [
    `### ${adapter}`,
    '',
    '| route | req/s | CPU µs/request | ÷ blocking (req/s, paired) | ÷ plain | entries written / requests |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const route of ROUTES) {
    const runs = byRound.map((round) => of(round, route));
    const paired = (other: Route) => median(byRound.map((round) => of(round, route).reqPerSec / of(round, other).reqPerSec)).toFixed(2);
    const requests = runs.reduce((sum, s) => sum + s.requests, 0);
    // autocannon stops mid-request at the end of a run: a request the server answered after that is written but not counted
    const entries = runs.reduce((sum, s) => sum + s.entries, 0);
    lines.push(
      `| ${route} | ${median(runs.map((s) => s.reqPerSec)).toFixed(0)} | ${median(runs.map((s) => s.cpuUsPerRequest)).toFixed(1)} | ${paired('blocking')} | ${paired('plain')} | ${route === 'plain' ? '–' : `${entries} / ${requests}`} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  // forked by `measure` (forkServer passes the configuration in BENCH_SERVER_CONFIG)
  if (process.env.BENCH_SERVER_CONFIG) return serve(JSON.parse(process.env.BENCH_SERVER_CONFIG) as ServerConfig);
  const adapters = flagValue('adapters', 'express,fastify').split(',') as Adapter[];
  for (const adapter of adapters) if (adapter !== 'express' && adapter !== 'fastify') throw new Error(`--adapters: "${adapter}" is neither express nor fastify`);
  const rounds = Number(flagValue('rounds', '7'));
  const duration = Number(flagValue('duration', '2'));
  const connections = Number(flagValue('connections', '10'));
  const out = flagValue('out', '');
  const redis = await startRedis();
  const results: Record<string, RunSample[][]> = {};
  try {
    for (const adapter of adapters) results[adapter] = await measure(adapter, redis.url, rounds, duration, connections);
  } finally {
    await redis.stop();
  }
  const report = [
    `# After-response batching without Nest or the library: ${rounds} rounds × ${duration} s per route, ${connections} connections, routes rotating`,
    '',
    ...adapters.flatMap((adapter) => [table(adapter, results[adapter]), '']),
  ].join('\n');
  console.log(report);
  if (out) {
    const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..', out);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'after-response-floor.md'), `${report}\n`);
    await writeFile(path.join(dir, 'after-response-floor.json'), `${JSON.stringify({ rounds, duration, connections, linger: LINGER_MS, results }, null, 2)}\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
