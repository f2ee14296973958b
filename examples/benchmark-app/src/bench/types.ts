/** Types shared by the benchmark runner, its server and its report. Type-only module. */

export type Adapter = 'express' | 'fastify';

/**
 * `plain`: no side-effect, no interceptor (the ceiling); `noop-interceptor`: plain plus a pass-through
 * interceptor; `blocking`: awaits the side-effect in the handler; `deferred`: `@AfterResponse()`;
 * `deferred-offload` (only where the scenario's sink can be offloaded): the same deferred
 * route, its sink an `OffloadedSink` whose client work runs in a worker thread;
 * `deferred-spool` (`bull-local`, `http-log` and `mix`): the same deferred route, its sink
 * (a twin of the `deferred` route's, same destination) behind the module's disk spool.
 * `deferred-packed` (`realistic`, `bull-local`, `bullmq-local`): the same deferred route, its sink a twin of the
 * `deferred` route's with `packJobs` (a write's jobs packed into one queue job, same queue).
 * `deferred-handle` (`mix` and the queue scenarios): the same items through the deferred handles as
 * handler parameters (`@Deferred.queue()`, …); `deferred-injected`, on a server started with
 * `BENCH_INJECTED=1` only (`dist/server/main-injected.js`): through handles injected into a service,
 * which turns the async context on for that whole server.
 * The peers, written as their users write them: `article-tap`: a route interceptor running the
 * side-effect in `tap(async () => ...)`; `event-emitter`: `@nestjs/event-emitter`, an async `@OnEvent` listener.
 */
export type Variant =
  | 'plain'
  | 'noop-interceptor'
  | 'blocking'
  | 'deferred'
  | 'deferred-offload'
  | 'deferred-spool'
  | 'deferred-packed'
  | 'deferred-handle'
  | 'deferred-injected'
  | 'article-tap'
  | 'event-emitter';

export type ScenarioId =
  | 'sim5'
  | 'sim25'
  | 'bull-local'
  | 'bull-proxy'
  | 'http-log'
  | 'mix'
  | 'sim5-tail'
  | 'compression'
  | 'bullmq-local'
  | 'bullmq-proxy'
  | 'rabbitmq'
  | 'nats'
  | 'graphql'
  | 'pg-local'
  | 'mysql-local'
  | 'realistic'
  | 'redis-stream'
  | 'sqs-local';

/** How the `compression` scenario's client asks for the large JSON body (`Accept-Encoding`). */
export type Encoding = 'identity' | 'gzip-6' | 'br-11';

/** Runner options, from the command line. */
export interface BenchOptions {
  /** Seconds per measured run. */
  duration: number;
  /** Concurrent connections of autocannon. */
  connections: number;
  /** Scenarios to run, in order. */
  scenarios: ScenarioId[];
  adapters: Adapter[];
  /** Measured runs per variant (variants alternate between repeats). */
  repeats: number;
  /** Seconds of warm-up per variant before the measured runs. */
  warmup: number;
  /** Where results go (a folder). */
  out: string;
  /** Round trip added by the TCP delay proxy of `bull-proxy` and `bullmq-proxy`, in ms. */
  proxyRttMs: number;
  /** Run the server under `node --cpu-prof` (profiles written to `<out>/profiles`). */
  cpuProf: boolean;
  /** Only these variants of each scenario (those a scenario has); `undefined`: all of them. */
  variants?: Variant[];
  help: boolean;
}

/**
 * What the disk spool of the `deferred-spool` route's sink did over one run — the Δ of its
 * `stats().sinks[name].spool` counters from before the run to one sync interval after its drain (so
 * the group commit that makes the last acks durable is counted too).
 */
export interface SpoolSample {
  /** Fsyncs made (one per dirty file per group commit, on libuv's thread pool). */
  fsyncs: number;
  /** `fsyncs` ÷ the run's measured seconds (autocannon's duration). */
  fsyncsPerSec: number;
  /** Records appended (a `JSON.stringify` each on the request thread; one write per event-loop turn) and acked. */
  appended: number;
  acked: number;
  /** Records still in the spool after the drain (a level, not a Δ): 0 when every item was delivered and acked. */
  pending: number;
  /** Group commits whose fsync failed, items refused (spool full) and items that could not be written. */
  syncErrors: number;
  refused: number;
  failed: number;
}

/** One measured run (one autocannon run of one route), as collected by the runner. */
export interface RunSample {
  /** Responses autocannon received. */
  requests: number;
  /** Handler invocations counted by the server (≥ requests: autocannon drops its in-flight requests at the end). */
  serverRequests: number;
  durationS: number;
  reqPerSec: number;
  latencyAvgMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /**
   * Server CPU (user + system) during the run and the drain that follows, per server request: the
   * whole process, worker threads included (`process.cpuUsage()` counts every thread).
   */
  cpuUsPerRequest: number;
  /**
   * Of that, the sink workers' share: Δ `stats().sinks[*].host.cpuMs` × 1000 ÷ server requests
   * (their CPU time; `activeMs`, busy wall time, where that is unavailable). 0 for a variant without a worker.
   */
  workerCpuUsPerRequest: number;
  /** `cpuUsPerRequest − workerCpuUsPerRequest`: the rest of the process — the request thread and Node's helper threads (GC, libuv pool). */
  requestThreadCpuUsPerRequest: number;
  /**
   * The raw Δ of the workers' busy time over the run, in ms, whatever the variant (an idle worker's
   * timers show here for the variants without one, which count it as 0), for checking.
   */
  workerActiveMs?: number;
  errors: number;
  non2xx: number;
  itemsExpected: number;
  itemsDelivered: number;
  /** Items the library counted as dropped, dead-lettered or still pending after the drain. */
  itemsLost: number;
  /** Of `itemsLost`, the items dropped because the sink's queue was full (`maxQueueSize`): load shed by design, not a failed write. */
  itemsDropped?: number;
  /**
   * Items the destination itself counted (records at the HTTP receiver, jobs in the Bull wait list,
   * BullMQ's `getJobCounts()`), when the scenario has one: an independent check of `itemsDelivered`.
   */
  itemsAtDestination?: number;
  /** The private Redis's own CPU during the run, per server request (Bull and BullMQ scenarios). */
  redisCpuUsPerRequest?: number;
  /** Unhandled promise rejections the server saw during the run (a side-effect fired without a catch). */
  unhandledRejections?: number;
  /** The event loop's delay over the run and its drain: its 99th percentile and its largest, in ms (see `ServerSnapshot.loopDelay`). */
  loopDelayP99Ms?: number;
  loopDelayMaxMs?: number;
  /** The spool's counters over the run (`deferred-spool` only). */
  spool?: SpoolSample;
}

/** A `deferred-spool` row's spool counters over its repeats: sums, but the median rate and the largest `pending`. */
export interface SpoolFigures {
  /** Summed over the repeats. */
  fsyncs: number;
  /** Median over the repeats. */
  fsyncsPerSec: number;
  /** Summed over the repeats. */
  appended: number;
  acked: number;
  /** The largest over the repeats: must be 0. */
  pending: number;
  /** Summed over the repeats. */
  syncErrors: number;
  refused: number;
  failed: number;
}

/** A row of `results/latest.json`: one scenario × adapter × variant, aggregated over its repeats. */
export interface ResultRow {
  scenario: ScenarioId;
  /** Human-readable name of the scenario. */
  scenarioLabel: string;
  adapter: Adapter;
  variant: Variant;
  connections: number;
  /** Responses received, summed over the repeats. */
  requests: number;
  /** Median over the repeats. */
  reqPerSec: number;
  latencyAvgMs: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Whole process, worker threads included. */
  cpuUsPerRequest: number;
  /** Median over the repeats: the sink workers' CPU per request (0 without a worker). */
  workerCpuUsPerRequest: number;
  /** Median over the repeats: the request thread's CPU per request (whole process − workers). */
  requestThreadCpuUsPerRequest: number;
  /** Summed over the repeats. */
  itemsExpected: number;
  itemsDelivered: number;
  itemsLost: number;
  /** Summed over the repeats: of `itemsLost`, dropped at a full sink queue; absent when none was. */
  itemsDropped?: number;
  /** Summed over the repeats; absent when the scenario has no countable destination. */
  itemsAtDestination?: number;
  /** Median over the repeats; Bull and BullMQ scenarios only. */
  redisCpuUsPerRequest?: number;
  /** Summed over the repeats; absent when none was seen. */
  unhandledRejections?: number;
  /** The event loop's delay: the median over the repeats of each run's 99th percentile, and the largest of any run, in ms. */
  loopDelayP99Ms?: number;
  loopDelayMaxMs?: number;
  /** The spool's counters (`deferred-spool` rows only). */
  spool?: SpoolFigures;
  errors: number;
  non2xx: number;
  repeats: number;
  durationS: number;
  /** The individual runs, in order. */
  runs: RunSample[];
}

/**
 * A row of `results/latest-compression.json`: the same large JSON route fetched with one
 * `Accept-Encoding`, with the library's `timing` split of handler time and send time.
 */
export interface CompressionRow {
  adapter: Adapter;
  encoding: Encoding;
  connections: number;
  requests: number;
  reqPerSec: number;
  latencyAvgMs: number;
  latencyP99Ms: number;
  cpuUsPerRequest: number;
  /** From `stats().routes`: mean time until the handler returned, and from then until the response finished. */
  handlerMsAvg: number;
  sendMsAvg: number;
  /** Size of one response body on the wire. */
  responseBytes: number;
  itemsExpected: number;
  itemsDelivered: number;
  repeats: number;
}

/** A scenario left out, and why. */
export interface SkippedScenario {
  scenario: ScenarioId;
  scenarioLabel: string;
  reason: string;
}

/** Ratios of one scenario × adapter. `undefined` where a variant is missing. */
export interface ScenarioRatios {
  scenario: ScenarioId;
  adapter: Adapter;
  /** deferred req/s ÷ blocking req/s. */
  deferredVsBlocking?: number;
  /** deferred req/s ÷ plain req/s. */
  deferredVsPlain?: number;
  /** deferred req/s ÷ article-tap req/s. */
  deferredVsArticleTap?: number;
  /** deferred req/s ÷ event-emitter req/s. */
  deferredVsEventEmitter?: number;
  /** deferred CPU µs/request ÷ noop-interceptor CPU µs/request. */
  cpuDeferredVsNoop?: number;
  /** blocking p99 ÷ deferred p99. */
  p99BlockingVsDeferred?: number;
  /** deferred-offload req/s ÷ plain req/s (scenarios with an offloadable sink). */
  deferredOffloadVsPlain?: number;
  /** deferred-offload req/s ÷ deferred req/s. */
  deferredOffloadVsDeferred?: number;
  /** deferred-offload req/s ÷ article-tap req/s. */
  deferredOffloadVsArticleTap?: number;
  /** deferred-offload req/s ÷ event-emitter req/s. */
  deferredOffloadVsEventEmitter?: number;
  /** deferred-packed req/s ÷ blocking req/s (`bull-local`, `bullmq-local`). */
  deferredPackedVsBlocking?: number;
  /** deferred-packed req/s ÷ plain req/s. */
  deferredPackedVsPlain?: number;
  /** deferred-packed req/s ÷ article-tap req/s. */
  deferredPackedVsArticleTap?: number;
  /** deferred-packed req/s ÷ event-emitter req/s. */
  deferredPackedVsEventEmitter?: number;
  /** deferred-packed req/s ÷ deferred req/s. */
  deferredPackedVsDeferred?: number;
  /** deferred-spool req/s ÷ plain req/s (`bull-local`, `http-log`, `mix`). */
  deferredSpoolVsPlain?: number;
  /** deferred-spool req/s ÷ deferred req/s: what the spool costs in throughput. */
  deferredSpoolVsDeferred?: number;
}

/**
 * One delivery check of the report: one scenario × adapter × route that hands items on (`deferred`,
 * `deferred-offload`, `deferred-spool`, `blocking`), and whether every item it took arrived.
 */
export interface DeliveryCheck {
  scenario: ScenarioId;
  adapter: Adapter;
  variant: Variant;
  /** What was counted, e.g. `1,200/1,200, destination agrees` (`, all acked` when spooled) or, when it failed, what fell short. */
  measured: string;
  /**
   * `true` when delivered = expected with nothing lost, the destination's own count (where it has one)
   * agrees, no unhandled rejection, no error or non-2xx response and (spooled) every record acked, none pending.
   */
  pass: boolean;
}

/**
 * The queue client's CPU per job on one adapter, estimated as the server's CPU µs/request of the
 * `deferred` route minus that of the `plain` route in the local-Redis scenarios (one job per request;
 * it includes the library's own per-request cost). `undefined` where a row is missing.
 */
export interface ClientCpuPerJob {
  adapter: Adapter;
  /** `bull-local`: deferred − plain CPU µs/request. */
  bull?: number;
  /** `bullmq-local`: deferred − plain CPU µs/request. */
  bullmq?: number;
  /** `rabbitmq`: deferred − plain CPU µs/request (the broker client's CPU per message, with the library's). */
  rabbitmq?: number;
  /** `nats`: deferred − plain CPU µs/request. */
  nats?: number;
}

/** Everything the report renders. */
export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; cpuModel: string; node: string; platform: string; loadAvg: number[] };
  options: Omit<BenchOptions, 'help' | 'out' | 'cpuProf'>;
  rows: ResultRow[];
  compression: CompressionRow[];
  skipped: SkippedScenario[];
  ratios: ScenarioRatios[];
  /** Per scenario × adapter × route that hands items on: whether every item arrived. */
  delivery: DeliveryCheck[];
}

/** What the server's `/__bench/stats` endpoint returns. */
export interface ServerSnapshot {
  cpu: { user: number; system: number };
  rssBytes: number;
  /** Handler invocations per route (`scenario/variant`). */
  handled: Record<string, number>;
  /** Items of awaited side-effects (blocking, article-tap, event-emitter) that completed, per route. */
  effectsDone: Record<string, number>;
  /** Awaited side-effects still running, per route (after a flush: those the bounded wait gave up on). */
  effectsInFlight: Record<string, number>;
  /** Unhandled promise rejections so far (counted by the server instead of ending the process). */
  unhandledRejections: number;
  /**
   * Sum of `stats().sinks[*].host.cpuMs` (or `activeMs` where unavailable): the CPU time, in ms, of every sink worker thread so far
   * (cumulative; 0 when no sink is offloaded). Its CPU is part of `cpu` too.
   */
  workerActiveMs: number;
  /** `stats().sinks[name].writes` by sink name: the writes each sink started so far (items ÷ writes is the batch size). */
  writes?: Record<string, number>;
  /**
   * The server's main thread's own CPU time so far, in ms (Linux `/proc/thread-self/schedstat`, read
   * there): the request thread exactly, without the workers' or V8's helper threads. `undefined`
   * where that file does not exist.
   */
  mainThreadCpuMs?: number;
  /** `DeferredWork.stats().routes`: timing per `"METHOD /route"` (routes measured with `timing`). */
  routes: Record<string, { count: number; handlerMsAvg: number; sendMsAvg: number }>;
  /** `DeferredWork.stats()` (totals). */
  deferred: {
    accepted: number;
    delivered: number;
    pending: number;
    dropped: number;
    deadLettered: number;
    rejected: number;
    skipped: number;
    requests: { finished: number; aborted: number };
  };
  /**
   * `stats().sinks[name].spool` of every spooled sink, by sink name (the `deferred-spool`
   * routes' twins; none when the server has no spool).
   */
  spool: Record<string, { fsyncs: number; syncErrors: number; appended: number; acked: number; pending: number; refused: number; failed: number }>;
  /** Whether the flush requested before the snapshot completed in time. */
  flushed?: boolean;
  /**
   * The event loop's delay since the previous snapshot (`monitorEventLoopDelay`, 2 ms resolution),
   * read after this one's flush and then reset: between a run's two snapshots, the run and its drain.
   */
  loopDelay?: { p99Ms: number; maxMs: number };
  /**
   * Garbage-collection pauses since the previous snapshot (a `gc` PerformanceObserver): how many, their
   * total and the longest (ms), and of them the full (mark-compact) collections.
   */
  gc?: { count: number; totalMs: number; maxMs: number; majorCount: number; majorMs: number };
}

/** Configuration the runner passes to the server process (env `BENCH_SERVER_CONFIG`, JSON). */
export interface ServerConfig {
  adapter: Adapter;
  scenarios: ScenarioId[];
  /** `redis://127.0.0.1:port` of the private Redis, for `bull-local` and `bullmq-local`. */
  redisUrl?: string;
  /** Same Redis through the delay proxy, for `bull-proxy` and `bullmq-proxy`. */
  proxiedRedisUrl?: string;
  /** Log receiver URL, for `http-log`. */
  logReceiverUrl?: string;
  /** `amqp://` URL of a RabbitMQ, for `rabbitmq`. */
  rabbitMqUrl?: string;
  /** `nats://` URL of a NATS server, for `nats`. */
  natsUrl?: string;
  /** `postgresql://` URL of the app's PostgreSQL database, for `pg-local`. */
  pgUrl?: string;
  /** `mysql://` URL of the app's MySQL / MariaDB database, for `mysql-local`. */
  mysqlUrl?: string;
  /** The queue URL of the runner's local SQS server (local-aws-sqs), for `sqs-local`. */
  sqsQueueUrl?: string;
  /**
   * Put response compression in front of every route (Express `compression`, Fastify
   * `@fastify/compress`; gzip level 6, Brotli quality 11). Only for the `compression` scenario's own server.
   */
  compression?: boolean;
  /**
   * The module's `spool` option, `{ dir: spoolDir }` (default `syncIntervalMs`), for the
   * `deferred-spool` routes' twin sinks (every other sink opts out with `spool: false`). A fresh
   * temporary directory per server process, made and removed by the runner. Absent: no spool, and no
   * `deferred-spool` routes.
   */
  spoolDir?: string;
}
