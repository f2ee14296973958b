/**
 * `pnpm bench`: starts the benchmark app as a separate process per adapter, drives each route with
 * autocannon on 127.0.0.1 (warm-up, then variants alternating over the repeats), reads the server's
 * own CPU and the library's `stats()` around every run, and writes results/latest.{json,md,svg}.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import {
  BROKER_SCENARIOS,
  routeRequest,
  routePath,
  ACCEPT_ENCODING,
  AWAITED_VARIANTS,
  BULL_SCENARIOS,
  benchStreamName,
  STREAM_SCENARIOS,
  BULLMQ_SCENARIOS,
  benchQueueName,
  benchTableName,
  DEFERRED_VARIANTS,
  ENCODINGS,
  expectedItems,
  OFFLOAD_VARIANT,
  PACKED_VARIANT,
  parseArgs,
  scenarioInfo,
  SPOOL_SETTLE_MS,
  SPOOL_VARIANT,
  spoolSinkName,
  SQL_SCENARIOS,
  USAGE,
  UsageError,
  variantOrder,
  variantsOf,
  WORKER_VARIANTS,
} from './args.js';
import {
  type DelayProxy,
  type LogReceiver,
  type PrivateRedis,
  redisCommand,
  redisCpuUs,
  startDelayProxy,
  startLogReceiver,
  startRedis,
} from './infra.js';
import {
  aggregateRuns,
  checkDelivery,
  computeRatios,
  cpuSplit,
  formatNumber,
  lostText,
  median,
  percentile,
  renderClientCpuPerJobText,
  renderCompressionJson,
  renderCompressionTable,
  renderJson,
  renderMarkdown,
  renderSpoolText,
  summaryLines,
  renderTable,
  renderDeliveryText,
  DELIVERY_TITLE,
} from './report.js';
import { forkServer, type ServerHandle, snapshot } from './server-process.js';
import { openSqlCounter, type SqlCounter } from './sql-counter.js';
import { type LocalSqs, startLocalSqs } from './sqs-local.js';
import { renderSvg } from './svg.js';
import type {
  BenchOptions,
  BenchReport,
  CompressionRow,
  Encoding,
  ResultRow,
  RunSample,
  ScenarioId,
  ServerConfig,
  ServerSnapshot,
  SkippedScenario,
  SpoolSample,
  Variant,
} from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** examples/benchmark-app (this file is dist/bench/run.js). */
const appRoot = path.resolve(here, '..', '..');
const serverEntry = path.resolve(here, '..', 'server', 'main.js');

const started = Date.now();
const elapsed = () => {
  const s = Math.round((Date.now() - started) / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};
const log = (line: string) => console.log(line);

function banner(lines: string[]): void {
  const width = Math.max(...lines.map((l) => l.length)) + 4;
  const bar = '!'.repeat(width);
  console.log(`\n${bar}\n${lines.map((l) => `! ${l.padEnd(width - 4)} !`).join('\n')}\n${bar}\n`);
}

function scenarioLabel(id: ScenarioId, options: BenchOptions): string {
  if (id === 'bull-proxy') return `Bull job, Redis at +${options.proxyRttMs} ms RTT`;
  if (id === 'bullmq-proxy') return `BullMQ job, Redis at +${options.proxyRttMs} ms RTT`;
  return scenarioInfo(id).label;
}

/** Why nothing answers a TCP connect to the URL's host and port within a second, or `undefined` when something does. */
function unreachable(url: string): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.setTimeout(1000, () => socket.destroy(new Error('timed out')));
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error) => resolve(error.message));
  });
}

/** Which of the library's optional sinks this build has (another part of the project ships them). */
async function probeSinks(): Promise<{ bull?: string; bullmq?: string; http?: string }> {
  const missing: { bull?: string; bullmq?: string; http?: string } = {};
  const isSinkClass = (value: unknown) => typeof value === 'function' && typeof (value as { prototype?: { write?: unknown } }).prototype?.write === 'function';
  try {
    const core = (await import('nestjs-deferred-work')) as Record<string, unknown>;
    if (!isSinkClass(core.HttpSink)) missing.http = 'sink not available (nestjs-deferred-work has no HttpSink export in this build)';
  } catch (error) {
    missing.http = `sink not available (${error instanceof Error ? error.message : String(error)})`;
  }
  try {
    const bull = (await import('nestjs-deferred-work/bull')) as Record<string, unknown>;
    if (!isSinkClass(bull.BullSink)) missing.bull = 'sink not available (nestjs-deferred-work/bull has no BullSink export in this build)';
  } catch (error) {
    missing.bull = `sink not available (${error instanceof Error ? error.message : String(error)})`;
  }
  try {
    const bullmq = (await import('nestjs-deferred-work/bullmq')) as Record<string, unknown>;
    if (!isSinkClass(bullmq.BullMqSink)) missing.bullmq = 'sink not available (nestjs-deferred-work/bullmq has no BullMqSink export in this build)';
    else await import('bullmq');
  } catch (error) {
    missing.bullmq = `sink or bullmq not available (${error instanceof Error ? error.message : String(error)})`;
  }
  return missing;
}

/**
 * Counts the jobs in a BullMQ queue with BullMQ's own `getJobCounts()` (every state; nothing
 * processes them here, so they stay waiting), on a connection of the runner's own to the private
 * Redis (never through the delay proxy). `close()` ends the connections it opened.
 */
function bullMqCounters(redisPort: number) {
  const queues = new Map<string, Promise<import('bullmq').Queue>>();
  const open = (name: string) => {
    let queue = queues.get(name);
    if (!queue) {
      queue = import('bullmq').then(({ Queue }) => new Queue(name, { connection: { host: '127.0.0.1', port: redisPort } }));
      queues.set(name, queue);
    }
    return queue;
  };
  return {
    count: async (name: string): Promise<number> => {
      const counts = await (await open(name)).getJobCounts();
      return Object.values(counts).reduce((total, n) => total + n, 0);
    },
    close: async () => {
      await Promise.allSettled([...queues.values()].map(async (queue) => (await queue).close()));
    },
  };
}

function startServer(config: ServerConfig, options: BenchOptions, profileDir: string): Promise<ServerHandle> {
  return forkServer(serverEntry, config, options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
}

/** How a request is sent: GET with headers, or a method and body (see `routeRequest`). */
type RequestShape = { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string };

/**
 * One autocannon run. Besides its result, the 2xx responses' latencies as measured by autocannon
 * (`process.hrtime`, fractions of a ms), whose percentiles its own histogram rounds to whole ms.
 */
async function drive(
  url: string,
  connections: number,
  duration: number,
  request: RequestShape = {},
): Promise<autocannon.Result & { latencyP50FineMs: number; latencyP99FineMs: number }> {
  // Without a callback autocannon returns its instance, an event emitter that is also a promise of the result.
  const instance = autocannon({ url, connections, duration, pipelining: 1, timeout: 10, ...request }) as unknown as autocannon.Instance &
    PromiseLike<autocannon.Result>;
  const latencies: number[] = [];
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await instance;
  const sorted = Float64Array.from(latencies).sort();
  return Object.assign(result, { latencyP50FineMs: percentile(sorted, 0.5), latencyP99FineMs: percentile(sorted, 0.99) });
}

const COMPRESSION_URL_PATH = '/compression/report';
const COMPRESSION_ROUTE_KEY = `GET ${COMPRESSION_URL_PATH}`;

/** Bytes of one response body as sent (not decompressed), for an `Accept-Encoding`. */
function bodyBytes(url: string, acceptEncoding: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve(bytes));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

/** One measured run of the compression route with one encoding. */
async function measureCompression(server: ServerHandle, encoding: Encoding, options: BenchOptions) {
  const before = await snapshot(server, true);
  const result = await drive(`${server.base}${COMPRESSION_URL_PATH}`, options.connections, options.duration, {
    headers: { 'accept-encoding': ACCEPT_ENCODING[encoding] },
  });
  const after = await snapshot(server, true);
  const t0 = before.routes[COMPRESSION_ROUTE_KEY] ?? { count: 0, handlerMsAvg: 0, sendMsAvg: 0 };
  const t1 = after.routes[COMPRESSION_ROUTE_KEY] ?? { count: 0, handlerMsAvg: 0, sendMsAvg: 0 };
  const measured = t1.count - t0.count;
  const key = COMPRESSION_URL_PATH.slice(1);
  const serverRequests = (after.handled[key] ?? 0) - (before.handled[key] ?? 0);
  const cpuUs = after.cpu.user + after.cpu.system - (before.cpu.user + before.cpu.system);
  const d = (pick: (s: ServerSnapshot['deferred']) => number) => pick(after.deferred) - pick(before.deferred);
  return {
    requests: result.requests.total,
    reqPerSec: result.requests.total / result.duration,
    latencyAvgMs: result.latency.average,
    latencyP99Ms: result.latencyP99FineMs,
    cpuUsPerRequest: serverRequests > 0 ? cpuUs / serverRequests : Number.NaN,
    handlerMsAvg: measured > 0 ? (t1.handlerMsAvg * t1.count - t0.handlerMsAvg * t0.count) / measured : Number.NaN,
    sendMsAvg: measured > 0 ? (t1.sendMsAvg * t1.count - t0.sendMsAvg * t0.count) / measured : Number.NaN,
    itemsExpected: expectedItems(scenarioInfo('compression'), d((s) => s.requests.finished), d((s) => s.requests.aborted)),
    itemsDelivered: d((s) => s.delivered),
    errors: result.errors + result.non2xx,
  };
}

/**
 * The Δ of one spooled sink's counters between two snapshots, its `pending` as of the later
 * one, and the fsyncs per second of a run lasting `durationS`. Throws when the server reports no spool
 * for the sink (the `deferred-spool` route would not have been spooled).
 */
function spoolDelta(before: ServerSnapshot, after: ServerSnapshot, sink: string, durationS: number): SpoolSample {
  const b = before.spool[sink];
  const a = after.spool[sink];
  if (!a || !b) throw new Error(`the server reports no spool for sink "${sink}" (stats().sinks["${sink}"].spool is missing)`);
  const fsyncs = a.fsyncs - b.fsyncs;
  return {
    fsyncs,
    fsyncsPerSec: durationS > 0 ? fsyncs / durationS : Number.NaN,
    appended: a.appended - b.appended,
    acked: a.acked - b.acked,
    pending: a.pending,
    syncErrors: a.syncErrors - b.syncErrors,
    refused: a.refused - b.refused,
    failed: a.failed - b.failed,
  };
}

/** Counts what a scenario's destination holds (receiver records, Bull jobs), when it has one. */
type DestinationCounter = () => Promise<number>;

/** One measured run of one route. */
async function measure(
  server: ServerHandle,
  scenario: ScenarioId,
  variant: Variant,
  options: BenchOptions,
  destination?: DestinationCounter,
  redisCpu?: () => Promise<number>,
): Promise<RunSample> {
  const key = `${scenario}/${variant}`;
  const before = await snapshot(server, true);
  const atDestinationBefore = await destination?.();
  const redisBefore = await redisCpu?.();
  const result = await drive(`${server.base}${routePath(scenario, variant)}`, options.connections, options.duration, routeRequest(scenario));
  const after = await snapshot(server, true);
  const atDestinationAfter = await destination?.();
  const redisAfter = await redisCpu?.();
  // the spool's counters one group commit after the drain (its last acks' fsync included)
  let spool: SpoolSample | undefined;
  if (variant === SPOOL_VARIANT) {
    await new Promise((resolve) => setTimeout(resolve, SPOOL_SETTLE_MS));
    spool = spoolDelta(before, await snapshot(server, false), spoolSinkName(scenario), result.duration);
  }
  const serverRequests = (after.handled[key] ?? 0) - (before.handled[key] ?? 0);
  const cpuUs = after.cpu.user + after.cpu.system - (before.cpu.user + before.cpu.system);
  const workerActiveMs = after.workerActiveMs - before.workerActiveMs;
  const cpu = cpuSplit({
    cpuUs,
    workerActiveMs,
    serverRequests,
    hasWorker: WORKER_VARIANTS.includes(variant),
    mainThreadCpuMs:
      after.mainThreadCpuMs !== undefined && before.mainThreadCpuMs !== undefined ? after.mainThreadCpuMs - before.mainThreadCpuMs : undefined,
  });
  const info = scenarioInfo(scenario);
  let itemsExpected = 0;
  let itemsDelivered = 0;
  let itemsLost = 0;
  let itemsDropped = 0;
  // The library's counters are process-wide, but one route runs at a time and both snapshots are
  // taken after a drain (pending 0 before the run), so their deltas belong to this variant alone.
  if (DEFERRED_VARIANTS.includes(variant)) {
    const d = (pick: (s: ServerSnapshot['deferred']) => number) => pick(after.deferred) - pick(before.deferred);
    itemsExpected = expectedItems(info, d((s) => s.requests.finished), d((s) => s.requests.aborted));
    itemsDelivered = d((s) => s.delivered);
    itemsDropped = d((s) => s.dropped);
    itemsLost = itemsDropped + d((s) => s.deadLettered) + d((s) => s.rejected) + after.deferred.pending;
  } else if (AWAITED_VARIANTS.includes(variant)) {
    // every handled request starts the side-effect once (after the handler for article-tap and event-emitter)
    itemsExpected = serverRequests * info.itemsPerRequest;
    itemsDelivered = (after.effectsDone[key] ?? 0) - (before.effectsDone[key] ?? 0);
    itemsLost = (after.effectsInFlight[key] ?? 0) * info.itemsPerRequest;
  }
  const counted = DEFERRED_VARIANTS.includes(variant) || AWAITED_VARIANTS.includes(variant);
  const requests = result.requests.total;
  return {
    requests,
    serverRequests,
    durationS: result.duration,
    reqPerSec: requests / result.duration,
    latencyAvgMs: result.latency.average,
    latencyP50Ms: result.latencyP50FineMs,
    latencyP99Ms: result.latencyP99FineMs,
    ...cpu,
    workerActiveMs,
    errors: result.errors,
    non2xx: result.non2xx,
    itemsExpected,
    itemsDelivered,
    itemsLost,
    ...(itemsDropped > 0 ? { itemsDropped } : {}),
    itemsAtDestination:
      counted && atDestinationBefore !== undefined && atDestinationAfter !== undefined ? atDestinationAfter - atDestinationBefore : undefined,
    redisCpuUsPerRequest:
      redisBefore !== undefined && redisAfter !== undefined && serverRequests > 0 ? (redisAfter - redisBefore) / serverRequests : undefined,
    unhandledRejections: after.unhandledRejections - before.unhandledRejections,
    loopDelayP99Ms: after.loopDelay?.p99Ms,
    loopDelayMaxMs: after.loopDelay?.maxMs,
    spool,
  };
}

async function main(): Promise<void> {
  let options: BenchOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    throw error;
  }
  if (options.help) {
    log(USAGE);
    return;
  }
  const outDir = path.resolve(appRoot, options.out);
  const profileDir = path.join(outDir, 'profiles');
  const startedAt = new Date().toISOString();
  const cpus = os.cpus();
  log(
    `nestjs-deferred-work benchmark: ${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, Node ${process.version}, ` +
      `load ${os.loadavg().map((l) => l.toFixed(2)).join('/')}`,
  );
  log(
    `${options.duration} s per run × ${options.repeats} repeat${options.repeats === 1 ? '' : 's'}, ${options.warmup} s warm-up per variant, ` +
      `${options.connections} connections, adapters ${options.adapters.join('+')}, scenarios ${options.scenarios.join(',')}`,
  );

  const skipped: SkippedScenario[] = [];
  const skip = (scenario: ScenarioId, reason: string) => {
    if (options.scenarios.includes(scenario) && !skipped.some((s) => s.scenario === scenario)) {
      skipped.push({ scenario, scenarioLabel: scenarioLabel(scenario, options), reason });
    }
  };
  const needs = (need: string) => options.scenarios.some((id) => scenarioInfo(id).needs.includes(need as never));

  const missing = await probeSinks();
  if (missing.bull) for (const id of BULL_SCENARIOS) skip(id, missing.bull);
  if (missing.bullmq) for (const id of [...BULLMQ_SCENARIOS, 'realistic' as const]) skip(id, missing.bullmq);
  if (missing.http) skip('http-log', missing.http);

  // the SQL scenarios' databases must answer (no skip: the run stops here, saying how to provide one)
  const sqlCounters = new Map<ScenarioId, SqlCounter>();
  try {
    for (const id of Object.keys(SQL_SCENARIOS) as ScenarioId[]) {
      if (options.scenarios.includes(id)) sqlCounters.set(id, await openSqlCounter(id));
    }
  } catch (error) {
    await Promise.allSettled([...sqlCounters.values()].map((counter) => counter.close()));
    throw error;
  }
  for (const id of sqlCounters.keys()) log(`${id}: ${SQL_SCENARIOS[id]!.what} at ${SQL_SCENARIOS[id]!.url} (a table per server, dropped when it stops)`);

  let redis: PrivateRedis | undefined;
  let proxy: DelayProxy | undefined;
  let receiver: LogReceiver | undefined;
  let bullMq: ReturnType<typeof bullMqCounters> | undefined;
  const wanted = (id: ScenarioId) => options.scenarios.includes(id) && !skipped.some((s) => s.scenario === id);
  // the queue scenarios, and `realistic` (a BullMQ job among its items), run against a private Redis
  const queueScenarios: ScenarioId[] = [...BULL_SCENARIOS, ...BULLMQ_SCENARIOS, 'realistic'];
  const redisScenarios = [...queueScenarios, ...STREAM_SCENARIOS];
  if (redisScenarios.some(wanted)) {
    try {
      redis = await startRedis();
      log(`private Redis ${redis.version} on 127.0.0.1:${redis.port} (no persistence)`);
    } catch (error) {
      const reason = `no Redis: ${error instanceof Error ? error.message : String(error)}`;
      for (const id of redisScenarios) skip(id, reason);
    }
  }
  if (redis && BULLMQ_SCENARIOS.some(wanted)) bullMq = bullMqCounters(redis.port);
  if (redis && (wanted('bull-proxy') || wanted('bullmq-proxy'))) {
    proxy = await startDelayProxy(redis.port, options.proxyRttMs / 2);
    log(`TCP delay proxy on 127.0.0.1:${proxy.port} → Redis, +${options.proxyRttMs} ms per round trip`);
  }
  let sqs: LocalSqs | undefined;
  if (wanted('sqs-local')) {
    sqs = await startLocalSqs();
    log(`local SQS server (local-aws-sqs) in the runner's process, queue ${sqs.queueUrl}`);
  }
  if (wanted('http-log') && needs('log-receiver')) {
    receiver = await startLogReceiver();
    log(`log receiver at ${receiver.url}`);
  }
  for (const [id, broker] of Object.entries(BROKER_SCENARIOS) as Array<[ScenarioId, { need: string; url: string }]>) {
    if (!wanted(id)) continue;
    const problem = await unreachable(broker.url);
    if (problem) skip(id, `no ${broker.need} at ${broker.url} (${problem}); start one there (the machine's own service)`);
  }
  const pgUrl = SQL_SCENARIOS['pg-local']?.url;
  if (wanted('realistic') && pgUrl) {
    const problem = await unreachable(pgUrl);
    if (problem) skip('realistic', `no PostgreSQL at ${pgUrl} (${problem}); start one there or set DW_BENCH_PG_URL`);
  }
  if (skipped.length > 0) {
    banner(['SKIPPED SCENARIOS', ...skipped.map((s) => `${s.scenario} (${s.scenarioLabel}): ${s.reason}`)]);
  }

  const scenarios = options.scenarios.filter((id) => !skipped.some((s) => s.scenario === id));
  const variantScenarios = scenarios.filter((id) => scenarioInfo(id).kind === 'variants');
  const withCompression = scenarios.includes('compression');
  const perAdapter = variantScenarios.reduce((n, id) => n + variantsOf(id, options.variants).length, 0) + (withCompression ? ENCODINGS.length : 0);
  const totalRuns = perAdapter * options.adapters.length * options.repeats;
  const estimate = perAdapter * options.adapters.length * (options.warmup + options.repeats * (options.duration + 0.3));
  log(`${totalRuns} measured runs, about ${Math.ceil(estimate / 60)} min\n`);

  const destination = (scenario: ScenarioId, server: ServerHandle): DestinationCounter | undefined => {
    const sql = sqlCounters.get(scenario);
    if (sql && server.child.pid !== undefined) {
      const table = benchTableName(scenario, server.child.pid);
      return () => sql.count(table);
    }
    if (scenario === 'sqs-local' && sqs) {
      const local = sqs;
      return () => local.count();
    }
    if (scenario === 'http-log' && receiver) {
      const r = receiver;
      return async () => r.records();
    }
    if (BULL_SCENARIOS.includes(scenario) && redis) {
      const port = redis.port;
      return async () => {
        const reply = await redisCommand(port, `LLEN bull:${benchQueueName(scenario)}:wait`);
        if (!reply.startsWith(':')) throw new Error(`LLEN answered ${reply}`);
        return Number(reply.slice(1));
      };
    }
    if (STREAM_SCENARIOS.includes(scenario) && redis && server.child.pid !== undefined) {
      const port = redis.port;
      const stream = benchStreamName(scenario, server.child.pid);
      return async () => {
        const reply = await redisCommand(port, `XLEN ${stream}`);
        if (!reply.startsWith(':')) throw new Error(`XLEN answered ${reply}`);
        return Number(reply.slice(1));
      };
    }
    if (BULLMQ_SCENARIOS.includes(scenario) && bullMq) {
      const counters = bullMq;
      return () => counters.count(benchQueueName(scenario));
    }
    return undefined;
  };

  const rows: ResultRow[] = [];
  const compressionRows: CompressionRow[] = [];
  let done = 0;
  const progress = () => `[${String(done).padStart(String(totalRuns).length)}/${totalRuns} ${elapsed()}]`;
  try {
    for (const adapter of options.adapters) {
      if (variantScenarios.length > 0) {
        // a fresh spool directory per server process (one process per spool: never shared), removed after it
        const spoolDir = variantScenarios.some((id) => scenarioInfo(id).spool)
          ? await mkdtemp(path.join(os.tmpdir(), `dw-bench-spool-${adapter}-`))
          : undefined;
        const config: ServerConfig = {
          adapter,
          scenarios: variantScenarios,
          redisUrl: redis?.url,
          proxiedRedisUrl: proxy ? `redis://127.0.0.1:${proxy.port}` : undefined,
          logReceiverUrl: receiver?.url,
          rabbitMqUrl: BROKER_SCENARIOS.rabbitmq?.url,
          natsUrl: BROKER_SCENARIOS.nats?.url,
          pgUrl: SQL_SCENARIOS['pg-local']?.url,
          mysqlUrl: SQL_SCENARIOS['mysql-local']?.url,
          sqsQueueUrl: sqs?.queueUrl,
          spoolDir,
        };
        let server: ServerHandle;
        try {
          server = await startServer(config, options, profileDir);
        } catch (error) {
          if (spoolDir) await rm(spoolDir, { recursive: true, force: true });
          throw error;
        }
        log(`[${elapsed()}] ${adapter}: server pid ${server.child.pid} at ${server.base}${spoolDir ? `, spool ${spoolDir}` : ''}`);
        try {
          for (const scenario of variantScenarios) {
            log(`[${elapsed()}] ${adapter} · ${scenario} (${scenarioLabel(scenario, options)})`);
            // only the routes this scenario has (deferred-offload where its sink can be offloaded)
            const variants = variantsOf(scenario, options.variants);
            if (options.warmup > 0) {
              for (const variant of variants) await drive(`${server.base}${routePath(scenario, variant)}`, options.connections, options.warmup, routeRequest(scenario));
              await snapshot(server, true);
            }
            const samples = new Map<Variant, RunSample[]>(variants.map((v) => [v, []]));
            for (let r = 0; r < options.repeats; r++) {
              for (const variant of variantOrder(variants, r)) {
                const redisCpu = redis && redisScenarios.includes(scenario) ? () => redisCpuUs(redis!.port) : undefined;
                // a packing route's queue holds packs, not jobs: its own count is not comparable
                const counter = variant === PACKED_VARIANT ? undefined : destination(scenario, server);
                const sample = await measure(server, scenario, variant, options, counter, redisCpu);
                samples.get(variant)!.push(sample);
                done++;
                const atDestination =
                  sample.itemsAtDestination !== undefined ? ` (${sample.itemsAtDestination} at the destination)` : '';
                const items =
                  sample.itemsExpected > 0 || sample.itemsDelivered > 0
                    ? `, items ${sample.itemsDelivered}/${sample.itemsExpected}${atDestination}${sample.itemsLost ? `, ${lostText(sample)}` : ''}`
                    : '';
                const redisText =
                  sample.redisCpuUsPerRequest !== undefined ? `, Redis ${formatNumber(sample.redisCpuUsPerRequest, 0)} µs/req` : '';
                const spool = sample.spool;
                const spoolText = spool
                  ? `, spool ${formatNumber(spool.fsyncsPerSec, 1)} fsyncs/s, appended/acked ${spool.appended}/${spool.acked}, pending ${spool.pending}` +
                    (spool.syncErrors + spool.refused + spool.failed > 0
                      ? ` (${spool.syncErrors} sync errors, ${spool.refused} refused, ${spool.failed} failed!)`
                      : '') +
                    (spool.pending > 0 || spool.acked !== spool.appended ? ' [NOT ALL ACKED]' : '')
                  : '';
                // where cpuMs is unavailable, activeMs (busy wall time) is used: on a contended machine it can exceed the CPU it got
                const contended =
                  sample.requestThreadCpuUsPerRequest < 0 ? ' [worker busy time > process CPU: contended machine, split not meaningful]' : '';
                // (the report also flags an offloaded route whose request-thread share falls below the plain route's)
                const problems =
                  contended +
                  (sample.errors + sample.non2xx > 0 ? `, ${sample.errors} errors, ${sample.non2xx} non-2xx` : '') +
                  (sample.unhandledRejections ? `, ${sample.unhandledRejections} unhandled rejections` : '');
                log(
                  `  ${progress()} ${variant.padEnd(16)} #${r + 1}: ` +
                    `${formatNumber(sample.reqPerSec, 0).padStart(7)} req/s, p99 ${formatNumber(sample.latencyP99Ms, 1)} ms, ` +
                    `loop p99 ${formatNumber(sample.loopDelayP99Ms ?? Number.NaN, 1)} ms, ` +
                    `${formatNumber(sample.cpuUsPerRequest, 0)} µs CPU/req (worker ${formatNumber(sample.workerCpuUsPerRequest, 0)}, ` +
                    `request thread ${formatNumber(sample.requestThreadCpuUsPerRequest, 0)})${redisText}${items}${spoolText}${problems}`,
                );
              }
            }
            for (const variant of variants) {
              rows.push(
                aggregateRuns(
                  { scenario, scenarioLabel: scenarioLabel(scenario, options), adapter, variant, connections: options.connections },
                  samples.get(variant)!,
                ),
              );
            }
            const ratio = computeRatios(rows).find((x) => x.scenario === scenario && x.adapter === adapter);
            const x = (value: number | undefined) => `${value?.toFixed(2) ?? 'n/a'}×`;
            log(
              `  → deferred ÷ blocking ${x(ratio?.deferredVsBlocking)}, ÷ plain ${x(ratio?.deferredVsPlain)}, ` +
                `÷ article-tap ${x(ratio?.deferredVsArticleTap)}, ÷ event-emitter ${x(ratio?.deferredVsEventEmitter)}, ` +
                `CPU deferred ÷ noop ${x(ratio?.cpuDeferredVsNoop)}`,
            );
            if (variants.includes(OFFLOAD_VARIANT)) {
              log(
                `  → ${OFFLOAD_VARIANT} ÷ deferred ${x(ratio?.deferredOffloadVsDeferred)}, ÷ plain ${x(ratio?.deferredOffloadVsPlain)}, ` +
                  `÷ article-tap ${x(ratio?.deferredOffloadVsArticleTap)}, ÷ event-emitter ${x(ratio?.deferredOffloadVsEventEmitter)}`,
              );
            }
            if (variants.includes(SPOOL_VARIANT)) {
              const spoolRow = rows.find((r) => r.scenario === scenario && r.adapter === adapter && r.variant === SPOOL_VARIANT);
              log(
                `  → ${SPOOL_VARIANT} ÷ plain ${x(ratio?.deferredSpoolVsPlain)}, ÷ deferred ${x(ratio?.deferredSpoolVsDeferred)}, ` +
                  `${formatNumber(spoolRow?.spool?.fsyncsPerSec ?? Number.NaN, 1)} fsyncs/s`,
              );
            }
          }
        } finally {
          await server.stop();
          if (spoolDir) await rm(spoolDir, { recursive: true, force: true });
        }
      }

      if (withCompression) {
        const server = await startServer({ adapter, scenarios: ['compression'], compression: true }, options, profileDir);
        log(`[${elapsed()}] ${adapter} · compression (${scenarioLabel('compression', options)}), server pid ${server.child.pid}`);
        try {
          const bytes = new Map<Encoding, number>();
          for (const encoding of ENCODINGS) {
            bytes.set(encoding, await bodyBytes(`${server.base}${COMPRESSION_URL_PATH}`, ACCEPT_ENCODING[encoding]));
            if (options.warmup > 0) {
              await drive(`${server.base}${COMPRESSION_URL_PATH}`, options.connections, options.warmup, {
                headers: { 'accept-encoding': ACCEPT_ENCODING[encoding] },
              });
            }
          }
          await snapshot(server, true);
          const samples = new Map<Encoding, Awaited<ReturnType<typeof measureCompression>>[]>(ENCODINGS.map((e) => [e, []]));
          for (let r = 0; r < options.repeats; r++) {
            for (let i = 0; i < ENCODINGS.length; i++) {
              const encoding = ENCODINGS[(i + r) % ENCODINGS.length];
              const sample = await measureCompression(server, encoding, options);
              samples.get(encoding)!.push(sample);
              done++;
              log(
                `  ${progress()} ${encoding.padEnd(16)} #${r + 1}: ${formatNumber(sample.reqPerSec, 1).padStart(7)} req/s, ` +
                  `handler ${formatNumber(sample.handlerMsAvg, 3)} ms, send ${formatNumber(sample.sendMsAvg, 2)} ms, ` +
                  `${formatNumber(sample.cpuUsPerRequest, 0)} µs CPU/req, items ${sample.itemsDelivered}/${sample.itemsExpected}` +
                  `${sample.errors > 0 ? `, ${sample.errors} errors` : ''}`,
              );
            }
          }
          for (const encoding of ENCODINGS) {
            const runs = samples.get(encoding)!;
            const med = (pick: (x: (typeof runs)[number]) => number) => median(runs.map(pick));
            compressionRows.push({
              adapter,
              encoding,
              connections: options.connections,
              requests: runs.reduce((t, x) => t + x.requests, 0),
              reqPerSec: med((x) => x.reqPerSec),
              latencyAvgMs: med((x) => x.latencyAvgMs),
              latencyP99Ms: med((x) => x.latencyP99Ms),
              cpuUsPerRequest: med((x) => x.cpuUsPerRequest),
              handlerMsAvg: med((x) => x.handlerMsAvg),
              sendMsAvg: med((x) => x.sendMsAvg),
              responseBytes: bytes.get(encoding) ?? Number.NaN,
              itemsExpected: runs.reduce((t, x) => t + x.itemsExpected, 0),
              itemsDelivered: runs.reduce((t, x) => t + x.itemsDelivered, 0),
              repeats: runs.length,
            });
          }
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    await bullMq?.close();
    await Promise.allSettled([proxy?.close(), receiver?.close(), sqs?.close(), redis?.stop(), ...[...sqlCounters.values()].map((counter) => counter.close())]);
  }

  const report: BenchReport = {
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model ?? 'unknown',
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      loadAvg: os.loadavg(),
    },
    options: {
      duration: options.duration,
      connections: options.connections,
      scenarios: options.scenarios,
      adapters: options.adapters,
      repeats: options.repeats,
      warmup: options.warmup,
      proxyRttMs: options.proxyRttMs,
    },
    rows,
    compression: compressionRows,
    skipped,
    ratios: computeRatios(rows),
    delivery: checkDelivery(rows),
  };
  await mkdir(outDir, { recursive: true });
  await writeFile(path.join(outDir, 'latest.json'), renderJson(rows));
  await writeFile(
    path.join(outDir, 'latest.svg'),
    renderSvg(rows, { title: `nestjs-deferred-work benchmark · ${options.connections} connections · ${report.machine.cpus} cores` }),
  );
  await writeFile(path.join(outDir, 'latest.md'), renderMarkdown(report, 'latest.svg'));
  if (compressionRows.length > 0) await writeFile(path.join(outDir, 'latest-compression.json'), renderCompressionJson(compressionRows));

  if (rows.length > 0) log(`\n${renderTable(rows)}\n`);
  const clientCpu = renderClientCpuPerJobText(rows);
  if (clientCpu) log(`${clientCpu}\n`);
  const spoolText = renderSpoolText(rows);
  if (spoolText) log(`${spoolText}\n`);
  if (compressionRows.length > 0) log(`Compression (handler vs send time, from stats().routes):\n${renderCompressionTable(compressionRows)}\n`);
  const summary = summaryLines(rows);
  if (summary.length > 0) log(`Summary:\n${summary.map((line) => `  ${line}`).join('\n')}\n`);
  log(`${DELIVERY_TITLE}:\n${renderDeliveryText(report.delivery)}\n`);
  for (const [id, broker] of Object.entries(BROKER_SCENARIOS) as Array<[ScenarioId, { need: string; url: string }]>) {
    if (!wanted(id)) continue;
    const problem = await unreachable(broker.url);
    if (problem) skip(id, `no ${broker.need} at ${broker.url} (${problem}); start one there (the machine's own service)`);
  }
  if (skipped.length > 0) {
    banner(['SKIPPED SCENARIOS', ...skipped.map((s) => `${s.scenario} (${s.scenarioLabel}): ${s.reason}`)]);
  }
  const rel = path.relative(process.cwd(), outDir) || '.';
  const written = ['latest.json', 'latest.md', 'latest.svg', ...(compressionRows.length > 0 ? ['latest-compression.json'] : [])];
  log(`Wrote ${rel}/${written.slice(0, -1).join(', ')} and ${written.at(-1)} in ${elapsed()}.${options.cpuProf ? ` CPU profiles in ${rel}/profiles.` : ''}`);
  if (outDir === path.resolve(appRoot, 'results')) {
    log('The docs quote results/latest.json: after a full run, `pnpm docs:bench` rewrites the tables of README.md and docs/benchmark.md; keep a partial run in results/runs/<name>/ (--out) instead.');
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
