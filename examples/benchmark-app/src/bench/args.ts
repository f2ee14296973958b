/**
 * The benchmark's catalog of scenarios and its command line. No runtime imports: the runner's
 * unit specs load this file directly.
 */
import type { Adapter, BenchOptions, Encoding, ScenarioId, Variant } from './types.js';

/** Items every memory sink of the benchmark servers keeps, whichever route writes to it (the sinks count every item delivered either way). */
export const MEMORY_CAPACITY = 100;

/** What a scenario needs from the runner before its server can start. */
export type ScenarioNeed = 'redis' | 'redis-proxy' | 'log-receiver' | 'rabbitmq' | 'nats' | 'postgres' | 'mysql';

export interface ScenarioInfo {
  id: ScenarioId;
  label: string;
  /** Items per request: deferred by `deferred`, delivered by one effect of the awaited variants. */
  itemsPerRequest: number;
  /** Of those, how many run even when the request is aborted (`when: 'always'`: logs and metrics). */
  alwaysItemsPerRequest: number;
  needs: ScenarioNeed[];
  /**
   * `variants`: the routes plain, noop-interceptor, blocking and deferred, and their two peers
   * (article-tap, event-emitter);
   * `encodings`: one large-JSON route fetched as identity, gzip 6 and Brotli 11, on its own server.
   */
  kind: 'variants' | 'encodings';
  /**
   * The scenario's sink can be offloaded (`HttpSink.offloaded()`, `BullSink.offloaded()`,
   * `BullMqSink.offloaded()`), so it also has the `deferred-offload` variant. See {@link variantsOf}.
   */
  offload?: boolean;
  /**
   * The scenario also has the `deferred-spool` variant — its deferred route's items through a
   * twin of its sink behind the module's disk spool. See {@link variantsOf}.
   */
  spool?: boolean;
  /**
   * The scenario also has the `deferred-packed` variant — its deferred route's jobs through a twin of
   * its queue sink with `packJobs`. See {@link variantsOf}.
   */
  packed?: boolean;
  /** The variants this scenario has, when not the usual ones (the GraphQL scenario: plain, blocking, deferred). */
  variants?: readonly Variant[];
}

/** The scenarios, in their default order (new ones last, so the numbers stay). */
export const SCENARIOS: readonly ScenarioInfo[] = [
  { id: 'sim5', label: 'simulated 5 ms side-effect', itemsPerRequest: 1, alwaysItemsPerRequest: 0, needs: [], kind: 'variants' },
  { id: 'sim25', label: 'simulated 25 ms side-effect', itemsPerRequest: 1, alwaysItemsPerRequest: 0, needs: [], kind: 'variants' },
  {
    id: 'bull-local',
    label: 'Bull job, local Redis',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 0,
    needs: ['redis'],
    kind: 'variants',
    offload: true,
    spool: true,
    packed: true,
  },
  {
    id: 'bull-proxy',
    label: 'Bull job, Redis at +30 ms RTT',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 0,
    needs: ['redis', 'redis-proxy'],
    kind: 'variants',
    offload: true,
  },
  {
    id: 'http-log',
    label: 'HTTP log sink, local receiver',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 1,
    needs: ['log-receiver'],
    kind: 'variants',
    offload: true,
    spool: true,
  },
  {
    id: 'mix',
    label: 'mix: 1 job + 2 logs + 2 metrics (memory sink)',
    itemsPerRequest: 5,
    alwaysItemsPerRequest: 4,
    needs: [],
    kind: 'variants',
    spool: true,
  },
  {
    id: 'sim5-tail',
    label: 'simulated 5 ms side-effect, every 1000th call 1 s',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 0,
    needs: [],
    kind: 'variants',
  },
  {
    id: 'compression',
    label: 'large JSON through response compression (timing on)',
    // the two timing metrics (handler_ms, send_ms) of each finished request
    itemsPerRequest: 2,
    alwaysItemsPerRequest: 0,
    needs: [],
    kind: 'encodings',
  },
  // the Bull pair again with BullMQ (appended, so the numbers of the scenarios above stay)
  {
    id: 'bullmq-local',
    label: 'BullMQ job, local Redis',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 0,
    needs: ['redis'],
    kind: 'variants',
    offload: true,
    packed: true,
  },
  {
    id: 'bullmq-proxy',
    label: 'BullMQ job, Redis at +30 ms RTT',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 0,
    needs: ['redis', 'redis-proxy'],
    kind: 'variants',
    offload: true,
  },
  // an event per request through a @nestjs/microservices client (ClientProxySink)
  { id: 'rabbitmq', label: 'RabbitMQ event (ClientRMQ, publisher confirms)', itemsPerRequest: 1, alwaysItemsPerRequest: 0, needs: ['rabbitmq'], kind: 'variants' },
  { id: 'nats', label: 'NATS event (ClientNats, core)', itemsPerRequest: 1, alwaysItemsPerRequest: 0, needs: ['nats'], kind: 'variants' },
  // a GraphQL query (Apollo) whose resolver has the sim5 side effect, three ways
  {
    id: 'graphql',
    label: 'GraphQL query (Apollo), simulated 5 ms side-effect',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 0,
    needs: [],
    kind: 'variants',
    variants: ['plain', 'blocking', 'deferred'],
  },
  // a row per request into the app's own database, through the app's pool (SqlSink)
  {
    id: 'pg-local',
    label: 'PostgreSQL row, local database (pg Pool)',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 1,
    needs: ['postgres'],
    kind: 'variants',
  },
  {
    id: 'mysql-local',
    label: 'MySQL / MariaDB row, local database (mysql2 pool)',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 1,
    needs: ['mysql'],
    kind: 'variants',
  },
  // a typical endpoint: guard, validation, a query, a 2 KB response; then a job, a log and a metric
  {
    id: 'realistic',
    label: 'realistic: bearer guard, ValidationPipe DTO, PostgreSQL query, 2 KB JSON; BullMQ job + log + metric',
    itemsPerRequest: 3,
    alwaysItemsPerRequest: 2,
    needs: ['redis', 'postgres'],
    kind: 'variants',
    variants: ['plain', 'blocking', 'article-tap', 'event-emitter', 'deferred', 'deferred-packed'],
  },
  // an entry per request appended to a Redis Stream (RedisStreamSink), on the runner's private Redis
  {
    id: 'redis-stream',
    label: 'Redis Stream entry (XADD), local Redis',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 1,
    needs: ['redis'],
    kind: 'variants',
    variants: ['plain', 'blocking', 'deferred', 'article-tap', 'event-emitter'],
  },
  // a message per request to an SQS queue, through the app's SQSClient (SqsSink)
  {
    id: 'sqs-local',
    label: 'SQS message, local SQS server (local-aws-sqs)',
    itemsPerRequest: 1,
    alwaysItemsPerRequest: 1,
    needs: [],
    kind: 'variants',
  },
];

/** The GraphQL scenario's endpoint: one query field per variant, over GET (Apollo's CSRF check wants the preflight header). */
export const GRAPHQL_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'apollo-require-preflight': 'true' });

/** The URL path (and query) a variant's route is driven at: `/sim5/deferred`, or `/graphql?query={deferred}`. */
export function routePath(scenario: ScenarioId, variant: Variant): string {
  return scenario === 'graphql' ? `/graphql?query=${encodeURIComponent(`{${variant}}`)}` : `/${scenario}/${variant}`;
}

/** The headers a scenario's requests carry (none but for GraphQL and `realistic`). */
export function routeHeaders(scenario: ScenarioId): Record<string, string> | undefined {
  if (scenario === 'realistic') return { ...REALISTIC_HEADERS };
  return scenario === 'graphql' ? { ...GRAPHQL_HEADERS } : undefined;
}

/** The `realistic` scenario's request: a JSON order posted with a bearer token. */
export const REALISTIC_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json',
  authorization: 'Bearer bench-token-c42',
});
export const REALISTIC_BODY = JSON.stringify({
  customerId: 'c-42',
  shipping: { street: 'Invalidenstraße 117', city: 'Berlin', zip: '10115', country: 'DE' },
  lines: [3, 8, 15, 23, 42].map((n, i) => ({ sku: `SKU-${String(n).padStart(4, '0')}`, quantity: i + 1 })),
  note: 'Please leave the parcel with the neighbours.',
});

/** How a scenario's routes are requested, as autocannon options: GET, or the `realistic` scenario's POST with its body. */
export function routeRequest(scenario: ScenarioId): { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } {
  if (scenario === 'realistic') return { method: 'POST', headers: routeHeaders(scenario), body: REALISTIC_BODY };
  return { method: 'GET', headers: routeHeaders(scenario) };
}

/** The scenarios that emit an event per request through a broker client, and the broker each needs. */
export const BROKER_SCENARIOS: Readonly<Partial<Record<ScenarioId, { need: 'rabbitmq' | 'nats'; url: string }>>> = {
  rabbitmq: { need: 'rabbitmq', url: 'amqp://guest:guest@127.0.0.1:5672' },
  nats: { need: 'nats', url: 'nats://127.0.0.1:4222' },
};

/**
 * The scenarios that write a row per request into the app's own database: the database each needs,
 * its URL (from the environment variable named, or the machine's own service) and what to set to
 * point the benchmark at another one.
 */
export const SQL_SCENARIOS: Readonly<Partial<Record<ScenarioId, { need: 'postgres' | 'mysql'; what: string; url: string; env: string }>>> = {
  'pg-local': {
    need: 'postgres',
    what: 'PostgreSQL',
    url: process.env.DW_BENCH_PG_URL || 'postgresql://postgres@127.0.0.1:5432/test',
    env: 'DW_BENCH_PG_URL',
  },
  'mysql-local': {
    need: 'mysql',
    what: 'MySQL / MariaDB',
    url: process.env.DW_BENCH_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test',
    env: 'DW_BENCH_MYSQL_URL',
  },
};

/**
 * The table a SQL scenario's server writes its rows to: one per server process (named after its
 * pid), created when the server starts and dropped when it stops; the runner counts its rows.
 */
export function benchTableName(scenario: ScenarioId, serverPid: number): string {
  return `bench_${scenario.replace(/-/g, '_')}_${serverPid}`;
}

/** The scenarios that add a Bull job per request, and those that add a BullMQ job. */
export const BULL_SCENARIOS: readonly ScenarioId[] = ['bull-local', 'bull-proxy'];
export const BULLMQ_SCENARIOS: readonly ScenarioId[] = ['bullmq-local', 'bullmq-proxy'];
/** The scenarios that append a Redis Stream entry per request. */
export const STREAM_SCENARIOS: readonly ScenarioId[] = ['redis-stream'];

/** The stream a scenario's server appends to (one per server process, named after its pid), for the server and the runner's count. */
export function benchStreamName(scenario: ScenarioId, serverPid: number): string {
  return `bench:${scenario}:${serverPid}`;
}

/** The name of the Bull or BullMQ queue a scenario adds its jobs to (default prefix `bull`), for the server and the runner's count. */
export function benchQueueName(scenario: ScenarioId): string {
  return `bench-${scenario}`;
}

export const ENCODINGS: readonly Encoding[] = ['identity', 'gzip-6', 'br-11'];

/** The `Accept-Encoding` the client sends for each encoding. */
export const ACCEPT_ENCODING: Readonly<Record<Encoding, string>> = { identity: 'identity', 'gzip-6': 'gzip', 'br-11': 'br' };

/** The six variants every `variants` scenario has. */
export const VARIANTS: readonly Variant[] = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter'];
/** The deferred route with its sink offloaded to a worker thread, in the scenarios marked `offload`. */
export const OFFLOAD_VARIANT: Variant = 'deferred-offload';
/** The deferred route with its sink behind the module's disk spool, in the scenarios marked `spool`. */
export const SPOOL_VARIANT: Variant = 'deferred-spool';
/** The deferred route with its queue sink packing jobs (`packJobs`), in the scenarios marked `packed`. */
export const PACKED_VARIANT: Variant = 'deferred-packed';
/** The variants that await the side-effect themselves (in the handler, a `tap`, a listener): the app counts what they deliver. */
export const AWAITED_VARIANTS: readonly Variant[] = ['blocking', 'article-tap', 'event-emitter'];
/** The variants that hand the side-effect to the library: what they deliver is counted by `stats()`. */
export const DEFERRED_VARIANTS: readonly Variant[] = ['deferred', OFFLOAD_VARIANT, SPOOL_VARIANT, PACKED_VARIANT, 'deferred-handle', 'deferred-injected'];
/** The variants whose sink runs in a worker thread: the only ones whose worker CPU is counted (see `cpuSplit`). */
export const WORKER_VARIANTS: readonly Variant[] = [OFFLOAD_VARIANT];

/**
 * The routes a scenario has, in the order the runner rotates them: the six of every `variants`
 * scenario, with `deferred-offload` after `deferred` where the scenario's sink can be offloaded and
 * `deferred-spool` after those where it has a spooled twin, then `deferred-packed` where its queue sink
 * has a packing twin; none for the `encodings` scenario.
 */
export function variantsOf(id: ScenarioId, only?: readonly Variant[]): Variant[] {
  if (only) return variantsOf(id).filter((v) => only.includes(v));
  const info = scenarioInfo(id);
  if (info.kind !== 'variants') return [];
  if (info.variants) return [...info.variants];
  const twins: Variant[] = [...(info.offload ? [OFFLOAD_VARIANT] : []), ...(info.spool ? [SPOOL_VARIANT] : []), ...(info.packed ? [PACKED_VARIANT] : [])];
  return VARIANTS.flatMap((v) => (v === 'deferred' ? [v, ...twins] : [v]));
}

/** The name of a scenario's offloaded twin sink (the `deferred-offload` route's), e.g. `bull-proxy-offload`. */
export function offloadSinkName(scenario: ScenarioId): string {
  return `${scenario}-offload`;
}

/** The name of a scenario's packing twin sink (the `deferred-packed` route's), e.g. `bullmq-local-packed`. */
export function packedSinkName(scenario: ScenarioId): string {
  return `${scenario}-packed`;
}

/** The name of a scenario's spooled twin sink (the `deferred-spool` route's), e.g. `bull-local-spool`; its spool is `<spool dir>/<name>`. */
export function spoolSinkName(scenario: ScenarioId): string {
  return `${scenario}-spool`;
}

/**
 * How long the runner waits after a `deferred-spool` run's drain before reading the spool's counters:
 * the library's default `syncIntervalMs` (200 ms, which the benchmark keeps) and a margin, so the
 * group commit of the last appends and acks is counted in that run's fsyncs.
 */
export const SPOOL_SETTLE_MS = 300;
export const ADAPTERS: readonly Adapter[] = ['express', 'fastify'];

export const DEFAULT_OPTIONS: Readonly<Omit<BenchOptions, 'scenarios' | 'adapters'>> = Object.freeze({
  duration: 2,
  connections: 10,
  repeats: 3,
  warmup: 1,
  out: 'results',
  proxyRttMs: 30,
  cpuProf: false,
  help: false,
});

export const USAGE = `Usage: pnpm bench [options]

  --duration <s>          seconds per measured run (default ${DEFAULT_OPTIONS.duration})
  --connections <n>       concurrent connections (default ${DEFAULT_OPTIONS.connections})
  --scenarios <list>      comma list of ${SCENARIOS.map((s) => s.id).join(', ')} (default: all)
  --adapter <a>           express | fastify | both (default both)
  --repeats <n>           measured runs per variant, variants alternating (default ${DEFAULT_OPTIONS.repeats})
  --warmup <s>            warm-up seconds per variant (default ${DEFAULT_OPTIONS.warmup}; 0 to skip)
  --proxy-rtt <ms>        round trip added by the Redis delay proxy (default ${DEFAULT_OPTIONS.proxyRttMs})
  --out <dir>             results folder, relative to examples/benchmark-app (default ${DEFAULT_OPTIONS.out})
  --variants <list>       only these variants of each scenario, comma list (default: all; see below)
  --cpu-prof              run the server under node --cpu-prof (profiles in <out>/profiles)
  -h, --help              this text

Scenarios: ${SCENARIOS.map((s) => `${s.id} (${s.label})`).join('; ')}.
pg-local writes to DW_BENCH_PG_URL (default postgresql://postgres@127.0.0.1:5432/test), mysql-local to
DW_BENCH_MYSQL_URL (default mysql://root@127.0.0.1:3306/test): a table of their own per server, dropped when it stops.
Variants per scenario: ${VARIANTS.join(', ')}; plus ${OFFLOAD_VARIANT} (the sink in a worker thread) in ${SCENARIOS.filter((s) => s.offload)
  .map((s) => s.id)
  .join(', ')}; plus ${SPOOL_VARIANT} (the sink behind the disk spool) in ${SCENARIOS.filter((s) => s.spool)
  .map((s) => s.id)
  .join(', ')}; plus ${PACKED_VARIANT} (the queue sink with packJobs) in ${SCENARIOS.filter((s) => s.packed || s.variants?.includes(PACKED_VARIANT))
  .map((s) => s.id)
  .join(', ')}.`;

/** A bad command line; the message says what to pass instead. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

function number(flag: string, raw: string | undefined, { min, integer }: { min: number; integer: boolean }): number {
  if (raw === undefined || raw.startsWith('--')) throw new UsageError(`${flag} needs a value, e.g. ${flag} ${min < 1 ? 1 : min * 2}.`);
  const value = Number(raw);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min) {
    throw new UsageError(`${flag} must be ${integer ? 'a whole number' : 'a number'} >= ${min}, got "${raw}".`);
  }
  return value;
}

function scenarioList(raw: string | undefined): ScenarioId[] {
  if (raw === undefined || raw.startsWith('--')) throw new UsageError('--scenarios needs a value, e.g. --scenarios sim5,mix.');
  const known = new Map(SCENARIOS.map((s) => [s.id as string, s.id]));
  const ids: ScenarioId[] = [];
  for (const part of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const id = known.get(part) ?? (/^\d+$/.test(part) ? SCENARIOS[Number(part) - 1]?.id : undefined);
    if (!id) {
      throw new UsageError(
        `Unknown scenario "${part}". Use ids (${SCENARIOS.map((s) => s.id).join(', ')}) or numbers 1-${SCENARIOS.length}.`,
      );
    }
    if (!ids.includes(id)) ids.push(id);
  }
  if (ids.length === 0) throw new UsageError('--scenarios is empty; name at least one scenario.');
  return ids;
}

/** Every variant some scenario has. */
const ALL_VARIANTS: readonly Variant[] = [...new Set([...VARIANTS, ...DEFERRED_VARIANTS])];

function variantList(raw: string | undefined): Variant[] {
  if (raw === undefined || raw.startsWith('--')) throw new UsageError('--variants needs a value, e.g. --variants plain,blocking,deferred,event-emitter.');
  const list = [...new Set(raw.split(',').map((p) => p.trim()).filter(Boolean))];
  const unknown = list.filter((v) => !ALL_VARIANTS.includes(v as Variant));
  if (unknown.length > 0) throw new UsageError(`Unknown variant "${unknown[0]}". Use some of ${ALL_VARIANTS.join(', ')}.`);
  if (list.length === 0) throw new UsageError('--variants is empty; name at least one variant.');
  return list as Variant[];
}

function adapterList(raw: string | undefined): Adapter[] {
  if (raw === 'both') return [...ADAPTERS];
  if (raw === 'express' || raw === 'fastify') return [raw];
  throw new UsageError(`--adapter must be express, fastify or both, got ${raw === undefined ? 'nothing' : `"${raw}"`}.`);
}

/** The value after `--<name>` on the command line, or `fallback` (the small benchmark scripts' flags). */
export function flagValue(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

/**
 * Parses the runner's arguments (`process.argv.slice(2)`). Accepts `--flag value` and `--flag=value`;
 * a lone `--` (as `pnpm bench -- ...` may pass) is ignored. Throws {@link UsageError}.
 */
export function parseArgs(argv: readonly string[]): BenchOptions {
  const options: BenchOptions = {
    ...DEFAULT_OPTIONS,
    scenarios: SCENARIOS.map((s) => s.id),
    adapters: [...ADAPTERS],
  };
  const args: string[] = [];
  for (const arg of argv) {
    if (arg === '--') continue;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    if (eq > 0) args.push(arg.slice(0, eq), arg.slice(eq + 1));
    else args.push(arg);
  }
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    switch (flag) {
      case '--duration':
        options.duration = number(flag, args[++i], { min: 1, integer: false });
        break;
      case '--connections':
        options.connections = number(flag, args[++i], { min: 1, integer: true });
        break;
      case '--scenarios':
      case '--scenario':
        options.scenarios = scenarioList(args[++i]);
        break;
      case '--adapter':
      case '--adapters':
        options.adapters = adapterList(args[++i]);
        break;
      case '--repeats':
        options.repeats = number(flag, args[++i], { min: 1, integer: true });
        break;
      case '--warmup':
        options.warmup = number(flag, args[++i], { min: 0, integer: false });
        break;
      case '--proxy-rtt':
        options.proxyRttMs = number(flag, args[++i], { min: 0, integer: true });
        break;
      case '--out': {
        const out = args[++i];
        if (out === undefined || out.startsWith('--') || out === '') throw new UsageError('--out needs a folder, e.g. --out results.');
        options.out = out;
        break;
      }
      case '--cpu-prof':
        options.cpuProf = true;
        break;
      case '--variants':
      case '--variant':
        options.variants = variantList(args[++i]);
        break;
      case '-h':
      case '--help':
        options.help = true;
        break;
      default:
        throw new UsageError(`Unknown option "${flag}". Run pnpm bench --help for the options.`);
    }
  }
  return options;
}

/** The catalog entry of a scenario. */
export function scenarioInfo(id: ScenarioId): ScenarioInfo {
  const info = SCENARIOS.find((s) => s.id === id);
  if (!info) throw new Error(`Unknown scenario ${id}`);
  return info;
}

/**
 * Items a run should deliver: every request whose response finished defers all its items; one the
 * client aborted (autocannon drops its in-flight requests when a run ends) still runs its `always` ones.
 */
export function expectedItems(info: ScenarioInfo, finished: number, aborted: number): number {
  return finished * info.itemsPerRequest + aborted * info.alwaysItemsPerRequest;
}

/**
 * Variant order of repeat `r` over a scenario's variants: rotated by `r`, so that no variant always runs
 * first, and in reverse every other repeat, so that no variant always runs right after the same one
 * (what one route leaves behind — garbage, a longer table or stream — falls on different routes).
 */
export function variantOrder(variants: readonly Variant[], r: number): Variant[] {
  const reversed = r % 2 === 1;
  const list = reversed ? [...variants].reverse() : variants;
  // With an even number of routes, a shift by an odd `r` of the reversed list would keep every route on
  // positions of one parity (the even repeats' too): one more step gives each route every position.
  const shift = reversed && list.length % 2 === 0 ? r + 1 : r;
  return list.map((_, i) => list[(i + shift) % list.length]);
}
