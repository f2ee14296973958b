/**
 * Aggregation, the CPU split between the request thread and the sink workers, ratios, the delivery
 * checks (every item handed on arrived) and the text renderings (terminal table, JSON, Markdown) of the benchmark's results. Pure functions, no runtime imports: the runner's unit
 * specs load this file directly.
 */
import type {
  Adapter,
  BenchReport,
  ClientCpuPerJob,
  CompressionRow,
  DeliveryCheck,
  ResultRow,
  RunSample,
  ScenarioId,
  ScenarioRatios,
  SkippedScenario,
  SpoolFigures,
  Variant,
} from './types.js';

const VARIANT_ORDER: readonly Variant[] = [
  'plain',
  'noop-interceptor',
  'blocking',
  'deferred',
  'deferred-offload',
  'deferred-spool',
  'deferred-packed',
  'article-tap',
  'event-emitter',
];
/** The deferred routes: in-process, offloaded to a worker thread, and packing queue jobs. */
const DEFERRED: readonly Variant[] = ['deferred', 'deferred-offload', 'deferred-packed'];
/** Every route that hands the side-effect to the library: those, and the spooled one (its deliveries count too). */
const LIBRARY_ROUTES: readonly Variant[] = [...DEFERRED, 'deferred-spool'];
/** The heading of the delivery checks, in the Markdown report and on the terminal. */
export const DELIVERY_TITLE = 'Delivery';

/** Median of a non-empty list (mean of the two middle values for an even count); `NaN` when empty. */
export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return Number.NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** `a ÷ b`, or `undefined` when either is missing, not finite, or `b` is 0. */
export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return undefined;
  return a / b;
}

/** The `q` quantile (0–1, nearest rank) of ascending values; `NaN` when there are none. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * The deferred route's req/s over another route's, paired within each repeat (the variants of one
 * repeat run back to back, so they share the machine's state) and the median of those ratios taken.
 * Falls back to the ratio of the medians when the two rows do not have the same number of runs.
 */
export function pairedRatio(a: ResultRow | undefined, b: ResultRow | undefined): number | undefined {
  if (!a || !b) return undefined;
  if (a.runs.length === 0 || a.runs.length !== b.runs.length) return ratio(a.reqPerSec, b.reqPerSec);
  const ratios = a.runs.map((run, i) => ratio(run.reqPerSec, b.runs[i].reqPerSec)).filter((r): r is number => r !== undefined);
  return ratios.length > 0 ? median(ratios) : undefined;
}

/** What one run's CPU splits into, per server request (see {@link cpuSplit}). */
export interface CpuSplit {
  cpuUsPerRequest: number;
  workerCpuUsPerRequest: number;
  requestThreadCpuUsPerRequest: number;
}

/**
 * Splits a run's process CPU between the request thread and the sink workers. `cpuUs` is the Δ of `process.cpuUsage()` (user + system, µs),
 * which counts every thread, the sink workers included; `workerActiveMs` the Δ of the workers' CPU
 * time (`stats().sinks[*].host.cpuMs`, ms, read from /proc/thread-self/schedstat; `activeMs` where unavailable). The workers' share per request is
 * `workerActiveMs × 1000 ÷ serverRequests`, the request thread's is the rest. For a variant without a
 * worker (`hasWorker` false) the worker share is 0 and the whole process counts as the request thread.
 * `NaN` everywhere when the server handled no request.
 */
export function cpuSplit(run: {
  cpuUs: number;
  workerActiveMs: number;
  serverRequests: number;
  hasWorker: boolean;
  /** Δ of the main thread's own CPU (ms), when the server could read it: then it is the request thread's share. */
  mainThreadCpuMs?: number;
}): CpuSplit {
  if (!(run.serverRequests > 0)) return { cpuUsPerRequest: Number.NaN, workerCpuUsPerRequest: Number.NaN, requestThreadCpuUsPerRequest: Number.NaN };
  const cpuUsPerRequest = run.cpuUs / run.serverRequests;
  const workerCpuUsPerRequest = run.hasWorker ? (Math.max(0, run.workerActiveMs) * 1000) / run.serverRequests : 0;
  const requestThreadCpuUsPerRequest =
    run.mainThreadCpuMs !== undefined ? (run.mainThreadCpuMs * 1000) / run.serverRequests : cpuUsPerRequest - workerCpuUsPerRequest;
  return { cpuUsPerRequest, workerCpuUsPerRequest, requestThreadCpuUsPerRequest };
}

/** One row from the repeated runs of one route: medians for rates and latencies, sums for counts. */
export function aggregateRuns(
  key: { scenario: ScenarioId; scenarioLabel: string; adapter: Adapter; variant: Variant; connections: number },
  runs: readonly RunSample[],
): ResultRow {
  const sum = (pick: (r: RunSample) => number) => runs.reduce((total, r) => total + pick(r), 0);
  const med = (pick: (r: RunSample) => number) => median(runs.map(pick));
  return {
    ...key,
    requests: sum((r) => r.requests),
    reqPerSec: med((r) => r.reqPerSec),
    latencyAvgMs: med((r) => r.latencyAvgMs),
    latencyP50Ms: med((r) => r.latencyP50Ms),
    latencyP99Ms: med((r) => r.latencyP99Ms),
    cpuUsPerRequest: med((r) => r.cpuUsPerRequest),
    workerCpuUsPerRequest: med((r) => r.workerCpuUsPerRequest),
    requestThreadCpuUsPerRequest: med((r) => r.requestThreadCpuUsPerRequest),
    itemsExpected: sum((r) => r.itemsExpected),
    itemsDelivered: sum((r) => r.itemsDelivered),
    itemsLost: sum((r) => r.itemsLost),
    ...(runs.some((r) => (r.itemsDropped ?? 0) > 0) ? { itemsDropped: sum((r) => r.itemsDropped ?? 0) } : {}),
    itemsAtDestination: runs.every((r) => r.itemsAtDestination !== undefined) && runs.length > 0 ? sum((r) => r.itemsAtDestination!) : undefined,
    redisCpuUsPerRequest: runs.some((r) => r.redisCpuUsPerRequest !== undefined) ? med((r) => r.redisCpuUsPerRequest ?? Number.NaN) : undefined,
    unhandledRejections: runs.some((r) => (r.unhandledRejections ?? 0) > 0) ? sum((r) => r.unhandledRejections ?? 0) : undefined,
    loopDelayP99Ms: runs.some((r) => r.loopDelayP99Ms !== undefined) ? med((r) => r.loopDelayP99Ms ?? Number.NaN) : undefined,
    loopDelayMaxMs: runs.some((r) => r.loopDelayMaxMs !== undefined) ? Math.max(...runs.map((r) => r.loopDelayMaxMs ?? 0)) : undefined,
    spool: aggregateSpool(runs),
    errors: sum((r) => r.errors),
    non2xx: sum((r) => r.non2xx),
    repeats: runs.length,
    durationS: sum((r) => r.durationS),
    runs: [...runs],
  };
}

/** The spool figures of a `deferred-spool` row (sums; the median fsyncs/s; the largest pending), or `undefined` when no run has any. */
function aggregateSpool(runs: readonly RunSample[]): SpoolFigures | undefined {
  const spooled = runs.flatMap((r) => (r.spool ? [r.spool] : []));
  if (spooled.length === 0) return undefined;
  const sum = (pick: (x: (typeof spooled)[number]) => number) => spooled.reduce((total, x) => total + pick(x), 0);
  return {
    fsyncs: sum((x) => x.fsyncs),
    fsyncsPerSec: median(spooled.map((x) => x.fsyncsPerSec)),
    appended: sum((x) => x.appended),
    acked: sum((x) => x.acked),
    pending: Math.max(...spooled.map((x) => x.pending)),
    syncErrors: sum((x) => x.syncErrors),
    refused: sum((x) => x.refused),
    failed: sum((x) => x.failed),
  };
}

function find(rows: readonly ResultRow[], scenario: ScenarioId, adapter: Adapter, variant: Variant): ResultRow | undefined {
  return rows.find((r) => r.scenario === scenario && r.adapter === adapter && r.variant === variant);
}

/** Scenario × adapter pairs in first-seen order. */
function groups(rows: ReadonlyArray<{ scenario: ScenarioId; adapter: Adapter }>): Array<{ scenario: ScenarioId; adapter: Adapter }> {
  const seen = new Set<string>();
  const out: Array<{ scenario: ScenarioId; adapter: Adapter }> = [];
  for (const r of rows) {
    const k = `${r.scenario}|${r.adapter}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push({ scenario: r.scenario, adapter: r.adapter });
    }
  }
  return out;
}

/** The ratios of every scenario × adapter present in `rows`. */
export function computeRatios(rows: readonly ResultRow[]): ScenarioRatios[] {
  return groups(rows).map(({ scenario, adapter }) => {
    const get = (v: Variant) => find(rows, scenario, adapter, v);
    const deferred = get('deferred');
    const offload = get('deferred-offload');
    const spool = get('deferred-spool');
    const packed = get('deferred-packed');
    const blocking = get('blocking');
    return {
      scenario,
      adapter,
      deferredVsBlocking: pairedRatio(deferred, blocking),
      deferredVsPlain: pairedRatio(deferred, get('plain')),
      deferredVsArticleTap: pairedRatio(deferred, get('article-tap')),
      deferredVsEventEmitter: pairedRatio(deferred, get('event-emitter')),
      cpuDeferredVsNoop: ratio(deferred?.cpuUsPerRequest, get('noop-interceptor')?.cpuUsPerRequest),
      p99BlockingVsDeferred: ratio(blocking?.latencyP99Ms, deferred?.latencyP99Ms),
      deferredOffloadVsPlain: pairedRatio(offload, get('plain')),
      deferredOffloadVsDeferred: pairedRatio(offload, deferred),
      deferredOffloadVsArticleTap: pairedRatio(offload, get('article-tap')),
      deferredOffloadVsEventEmitter: pairedRatio(offload, get('event-emitter')),
      deferredPackedVsBlocking: pairedRatio(packed, blocking),
      deferredPackedVsPlain: pairedRatio(packed, get('plain')),
      deferredPackedVsArticleTap: pairedRatio(packed, get('article-tap')),
      deferredPackedVsEventEmitter: pairedRatio(packed, get('event-emitter')),
      deferredPackedVsDeferred: pairedRatio(packed, deferred),
      deferredSpoolVsPlain: pairedRatio(spool, get('plain')),
      deferredSpoolVsDeferred: pairedRatio(spool, deferred),
    };
  });
}

const times = (x: number | undefined, digits = 2): string => (x === undefined ? 'n/a' : `${x.toFixed(digits)}×`);

/**
 * Whether a spooled row's spool settled — every record appended was acked, none left pending
 * after the drain, every item spooled (nothing refused or failed), no fsync failed. `true` for a row without a spool.
 */
function spoolSettled(row: ResultRow): boolean {
  const s = row.spool;
  return (
    s === undefined ||
    (s.pending === 0 && s.acked === s.appended && s.appended === row.itemsDelivered && s.refused + s.failed + s.syncErrors === 0)
  );
}

/** Whether a row delivered every item it should have, with nothing lost, the destination agreeing, and (spooled) every item acked. */
function deliveredAll(row: ResultRow): boolean {
  return (
    row.itemsDelivered === row.itemsExpected &&
    row.itemsLost === 0 &&
    (row.itemsAtDestination === undefined || row.itemsAtDestination === row.itemsDelivered) &&
    spoolSettled(row)
  );
}

/**
 * `3 lost`, or `3 lost (2 dropped: the sink's queue was full)` when some were shed at a full queue
 * (`maxQueueSize`) rather than failed, dead-lettered or left pending.
 */
export function lostText(counts: { itemsLost: number; itemsDropped?: number }): string {
  const dropped = counts.itemsDropped ?? 0;
  return `${counts.itemsLost} lost` + (dropped > 0 ? ` (${dropped} dropped: the sink's queue was full)` : '');
}

/** `12 of 20, 3 lost, 11 at the destination, spool: 20 appended, 19 acked, 1 pending` for a row that fell short. */
function shortfall(row: ResultRow): string {
  const s = row.spool;
  return (
    `${row.itemsDelivered} of ${row.itemsExpected}` +
    (row.itemsLost > 0 ? `, ${lostText(row)}` : '') +
    (row.itemsAtDestination !== undefined && row.itemsAtDestination !== row.itemsDelivered ? `, ${row.itemsAtDestination} at the destination` : '') +
    (s && !spoolSettled(row)
      ? `, spool: ${s.appended} appended, ${s.acked} acked, ${s.pending} pending` +
        (s.refused + s.failed + s.syncErrors > 0 ? `, ${s.refused} refused, ${s.failed} failed, ${s.syncErrors} sync errors` : '')
      : '')
  );
}

/** `, 2 unhandled rejections, 3 errors, 1 non-2xx` for what else went wrong on a row (`''` when nothing did). */
function failures(row: ResultRow): string {
  return (
    (row.unhandledRejections ? `, ${row.unhandledRejections} unhandled rejection${row.unhandledRejections === 1 ? '' : 's'}` : '') +
    (row.errors > 0 ? `, ${row.errors} error${row.errors === 1 ? '' : 's'}` : '') +
    (row.non2xx > 0 ? `, ${row.non2xx} non-2xx` : '')
  );
}

/**
 * The delivery checks: for each scenario × adapter × route that hands items on — the library's routes
 * (`deferred`, `deferred-offload`, `deferred-spool`) and the `blocking` baseline — whether delivered =
 * expected with nothing lost, the destination's own count agreeing (where it has one), no unhandled
 * rejection, no error or non-2xx response, and, on a spooled route, every record acked and none pending.
 * The peers' own losses show in their rows of the table. In row order (scenario, adapter, route).
 */
export function checkDelivery(rows: readonly ResultRow[]): DeliveryCheck[] {
  return sortRows(rows)
    .filter((row) => row.itemsExpected > 0 && (LIBRARY_ROUTES.includes(row.variant) || row.variant === 'blocking'))
    .map((row) => {
      const pass = deliveredAll(row) && failures(row) === '';
      const counted =
        `${formatNumber(row.itemsDelivered, 0)}/${formatNumber(row.itemsExpected, 0)}` +
        (row.itemsAtDestination !== undefined ? ', destination agrees' : '') +
        (row.spool ? ', all acked' : '');
      return { scenario: row.scenario, adapter: row.adapter, variant: row.variant, measured: pass ? counted : `${shortfall(row)}${failures(row)}`, pass };
    });
}

/** The delivery checks grouped by scenario × adapter: `[scenario, adapter, per-route counts, result]`. */
function deliveryGroups(checks: readonly DeliveryCheck[]): Array<{ scenario: ScenarioId; adapter: Adapter; counts: string; failed: string[] }> {
  const out: Array<{ scenario: ScenarioId; adapter: Adapter; counts: string; failed: string[] }> = [];
  for (const { scenario, adapter } of groups(checks)) {
    const mine = checks.filter((c) => c.scenario === scenario && c.adapter === adapter);
    out.push({
      scenario,
      adapter,
      counts: mine.filter((c) => c.pass).map((c) => `${c.variant} ${c.measured}`).join('; '),
      failed: mine.filter((c) => !c.pass).map((c) => `${scenario}/${adapter}/${c.variant}: ${c.measured}`),
    });
  }
  return out;
}

/** The delivery checks as a Markdown table, one line per scenario × adapter; a failed route is named with what fell short. */
export function renderDelivery(checks: readonly DeliveryCheck[]): string {
  const escape = (s: string) => s.replace(/\|/g, '\\|');
  const out = ['| scenario | adapter | delivered/expected per route | result |', '| --- | --- | --- | --- |'];
  for (const g of deliveryGroups(checks)) {
    out.push(`| ${g.scenario} | ${g.adapter} | ${escape(g.counts || '–')} | ${g.failed.length === 0 ? 'ok' : `**failed**: ${escape(g.failed.join('; '))}`} |`);
  }
  return out.join('\n');
}

/** The delivery checks as plain text lines, one per scenario × adapter and one per failed route. */
export function renderDeliveryText(checks: readonly DeliveryCheck[]): string {
  const lines: string[] = [];
  for (const g of deliveryGroups(checks)) {
    if (g.counts) lines.push(`  ok    ${g.adapter.padEnd(8)} ${g.scenario}: ${g.counts}`);
    for (const f of g.failed) lines.push(`FAILED  ${g.adapter.padEnd(8)} ${f}`);
  }
  return lines.join('\n');
}

/**
 * Per adapter with a `bull-local` or `bullmq-local` run: the queue client's CPU per job, estimated as
 * the deferred route's CPU µs/request minus the plain route's (one job per request, so this is what
 * deferring and adding one job costs the server, the library's own share included).
 */
export function clientCpuPerJob(rows: readonly ResultRow[]): ClientCpuPerJob[] {
  const measured: ScenarioId[] = ['bull-local', 'bullmq-local', 'rabbitmq', 'nats'];
  const adapters = [...new Set(rows.filter((r) => measured.includes(r.scenario)).map((r) => r.adapter))];
  return adapters.map((adapter) => {
    const difference = (scenario: ScenarioId) => {
      const deferred = find(rows, scenario, adapter, 'deferred')?.cpuUsPerRequest;
      const plain = find(rows, scenario, adapter, 'plain')?.cpuUsPerRequest;
      return deferred !== undefined && plain !== undefined && Number.isFinite(deferred) && Number.isFinite(plain) ? deferred - plain : undefined;
    };
    return { adapter, bull: difference('bull-local'), bullmq: difference('bullmq-local'), rabbitmq: difference('rabbitmq'), nats: difference('nats') };
  });
}

/** What {@link clientCpuPerJob} computes, said once above its lines. */
export const CLIENT_CPU_PER_JOB_NOTE =
  'deferred CPU µs/req − plain CPU µs/req of the same adapter in bull-local, bullmq-local, rabbitmq and nats; one job or event per request, ' +
  'so this is the library and the queue client together, a difference and not a measurement of its own';

/** `client CPU per job: Bull 147 µs, BullMQ 95 µs` (`n/a` for a scenario not run). */
export function clientCpuPerJobLine(entry: ClientCpuPerJob): string {
  const us = (value: number | undefined) => (value === undefined ? 'n/a' : `${formatNumber(value, 0)} µs`);
  const brokers = entry.rabbitmq !== undefined || entry.nats !== undefined ? `; per event: RabbitMQ ${us(entry.rabbitmq)}, NATS ${us(entry.nats)}` : '';
  return `client CPU per job: Bull ${us(entry.bull)}, BullMQ ${us(entry.bullmq)}${brokers}`;
}

/** The client-CPU-per-job lines for the terminal, or `''` when neither local queue scenario ran. */
export function renderClientCpuPerJobText(rows: readonly ResultRow[]): string {
  const entries = clientCpuPerJob(rows);
  if (entries.length === 0) return '';
  return [`Client CPU per job (${CLIENT_CPU_PER_JOB_NOTE}):`, ...entries.map((e) => `  ${e.adapter.padEnd(8)} ${clientCpuPerJobLine(e)}`)].join('\n');
}

/** `12345.6` → `12,346`; small values keep one decimal. */
export function formatNumber(value: number, decimals?: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  const digits = decimals ?? (Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2);
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** `delivered/expected`, with a `!` when the destination's own count disagrees, and any unhandled rejections. */
function items(row: ResultRow): string {
  if (row.itemsExpected === 0 && row.itemsDelivered === 0) return '-';
  const text = `${row.itemsDelivered}/${row.itemsExpected}`;
  const destination =
    row.itemsAtDestination !== undefined && row.itemsAtDestination !== row.itemsDelivered ? ` (${row.itemsAtDestination} at destination!)` : '';
  const rejections = row.unhandledRejections ? ` (${row.unhandledRejections} unhandled rejections!)` : '';
  const s = row.spool;
  const spool = s && !spoolSettled(row) ? ` (spool: ${s.acked} of ${s.appended} acked, ${s.pending} pending!)` : '';
  return `${text}${destination}${rejections}${spool}`;
}

function cells(row: ResultRow, ratios: readonly ScenarioRatios[]): string[] {
  const r = ratios.find((x) => x.scenario === row.scenario && x.adapter === row.adapter);
  const isDeferred = row.variant === 'deferred';
  const isOffload = row.variant === 'deferred-offload';
  const isSpool = row.variant === 'deferred-spool';
  const isPacked = row.variant === 'deferred-packed';
  return [
    row.scenario,
    row.adapter,
    row.variant,
    formatNumber(row.reqPerSec, 0),
    formatNumber(row.latencyAvgMs),
    formatNumber(row.latencyP50Ms, 1),
    formatNumber(row.latencyP99Ms, 1),
    formatNumber(row.cpuUsPerRequest, 0),
    formatNumber(row.workerCpuUsPerRequest, 0),
    formatNumber(row.requestThreadCpuUsPerRequest, 0),
    items(row),
    isDeferred ? times(r?.deferredVsBlocking) : isPacked ? times(r?.deferredPackedVsBlocking) : '',
    isDeferred
      ? times(r?.deferredVsPlain)
      : isOffload
        ? times(r?.deferredOffloadVsPlain)
        : isSpool
          ? times(r?.deferredSpoolVsPlain)
          : isPacked
            ? times(r?.deferredPackedVsPlain)
            : '',
    isDeferred ? times(r?.deferredVsArticleTap) : isOffload ? times(r?.deferredOffloadVsArticleTap) : isPacked ? times(r?.deferredPackedVsArticleTap) : '',
    isDeferred ? times(r?.deferredVsEventEmitter) : isOffload ? times(r?.deferredOffloadVsEventEmitter) : isPacked ? times(r?.deferredPackedVsEventEmitter) : '',
    isOffload ? times(r?.deferredOffloadVsDeferred) : isSpool ? times(r?.deferredSpoolVsDeferred) : isPacked ? times(r?.deferredPackedVsDeferred) : '',
    row.spool ? formatNumber(row.spool.fsyncsPerSec, 1) : '',
    row.loopDelayP99Ms !== undefined ? formatNumber(row.loopDelayP99Ms, 1) : '',
  ];
}

const HEADERS = [
  'scenario',
  'adapter',
  'variant',
  'req/s',
  'avg ms',
  'p50 ms',
  'p99 ms',
  'CPU µs/req',
  'worker CPU µs/req',
  'request-thread CPU µs/req',
  'items delivered/expected',
  '÷ blocking',
  '÷ plain',
  '÷ article-tap',
  '÷ event-emitter',
  '÷ deferred',
  'fsyncs/s',
  'loop delay p99 ms',
];
const NUMERIC_COLUMNS = new Set([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
/** Index of the first ratio column (`÷ blocking`) in {@link HEADERS}. */
const FIRST_RATIO_COLUMN = HEADERS.indexOf('÷ blocking');

/** Rows sorted by scenario order of appearance, adapter, then variant order. */
export function sortRows(rows: readonly ResultRow[]): ResultRow[] {
  const scenarioOrder = [...new Set(rows.map((r) => r.scenario))];
  const adapterOrder = [...new Set(rows.map((r) => r.adapter))];
  return [...rows].sort(
    (a, b) =>
      scenarioOrder.indexOf(a.scenario) - scenarioOrder.indexOf(b.scenario) ||
      adapterOrder.indexOf(a.adapter) - adapterOrder.indexOf(b.adapter) ||
      VARIANT_ORDER.indexOf(a.variant) - VARIANT_ORDER.indexOf(b.variant),
  );
}

/** A plain-text table for the terminal (the ratio columns are filled on the `deferred`, `deferred-offload` and `deferred-spool` rows). */
export function renderTable(rows: readonly ResultRow[]): string {
  const ratios = computeRatios(rows);
  const body = sortRows(rows).map((row) => cells(row, ratios));
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...body.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c.map((text, i) => (NUMERIC_COLUMNS.has(i) ? text.padStart(widths[i]) : text.padEnd(widths[i]))).join('  ').trimEnd();
  const out = [line(HEADERS), widths.map((w) => '-'.repeat(w)).join('  ')];
  let previous = '';
  for (let i = 0; i < body.length; i++) {
    const group = `${body[i][0]}|${body[i][1]}`;
    if (previous && group !== previous) out.push('');
    previous = group;
    out.push(line(body[i]));
  }
  return out.join('\n');
}

/** The table in Markdown. */
export function renderMarkdownTable(rows: readonly ResultRow[]): string {
  const ratios = computeRatios(rows);
  const escape = (s: string) => s.replace(/\|/g, '\\|');
  const out = [
    `| ${HEADERS.map(escape).join(' | ')} |`,
    `| ${HEADERS.map((_, i) => (NUMERIC_COLUMNS.has(i) ? '---:' : '---')).join(' | ')} |`,
  ];
  for (const row of sortRows(rows)) {
    const c = cells(row, ratios);
    if (LIBRARY_ROUTES.includes(row.variant)) c[3] = `**${c[3]}**`;
    if (row.variant === 'deferred' && c[FIRST_RATIO_COLUMN] !== '' && c[FIRST_RATIO_COLUMN] !== 'n/a') {
      c[FIRST_RATIO_COLUMN] = `**${c[FIRST_RATIO_COLUMN]}**`;
    }
    out.push(`| ${c.map(escape).join(' | ')} |`);
  }
  return out.join('\n');
}

/**
 * Per scenario × adapter with a `deferred-spool` row, what the spool costs — req/s and its
 * ratios to plain and deferred, the fsyncs per second, the CPU per request over the deferred route's
 * (the whole process, where the fsyncs on libuv's thread pool count, and the request thread, where
 * every item's `JSON.stringify` and each turn's `writeSync` count) — and whether every item was acked.
 */
export function spoolSummary(rows: readonly ResultRow[]): string[][] {
  const ratios = computeRatios(rows);
  const signed = (value: number) => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${formatNumber(value, 1)}` : 'n/a');
  return sortRows(rows)
    .filter((row) => row.variant === 'deferred-spool')
    .map((row) => {
      const r = ratios.find((x) => x.scenario === row.scenario && x.adapter === row.adapter);
      const deferred = find(rows, row.scenario, row.adapter, 'deferred');
      const s = row.spool;
      return [
        row.scenario,
        row.adapter,
        formatNumber(row.reqPerSec, 0),
        times(r?.deferredSpoolVsPlain),
        times(r?.deferredSpoolVsDeferred),
        s ? formatNumber(s.fsyncsPerSec, 1) : 'n/a',
        signed(row.cpuUsPerRequest - (deferred?.cpuUsPerRequest ?? Number.NaN)),
        signed(row.requestThreadCpuUsPerRequest - (deferred?.requestThreadCpuUsPerRequest ?? Number.NaN)),
        s ? `${s.acked}/${s.appended}` : 'n/a',
        s ? String(s.pending) : 'n/a',
        deliveredAll(row) ? 'yes' : `no: ${shortfall(row)}`,
      ];
    });
}

const SPOOL_HEADERS = [
  'scenario',
  'adapter',
  'req/s',
  '÷ plain',
  '÷ deferred',
  'fsyncs/s',
  'CPU µs/req vs deferred',
  'request-thread CPU µs/req vs deferred',
  'spool acked/appended',
  'spool pending after drain',
  'delivered = expected, all acked',
];

/** What {@link spoolSummary}'s columns are, said once above it. */
export const SPOOL_NOTE =
  'the `deferred-spool` route (the deferred route, its sink a twin of the `deferred` route\'s behind the module\'s disk spool, ' +
  'default `syncIntervalMs` 200 ms): its req/s over the plain and deferred routes\', the fsyncs its spool made per measured second ' +
  '(Δ `stats().sinks[name].spool.fsyncs`, counted until one sync interval after the drain), its CPU per request minus the deferred ' +
  'route\'s (whole process, with the fsyncs on libuv\'s thread pool; and the request thread alone, with each item\'s `JSON.stringify` ' +
  'and each turn\'s `writeSync`), and the spool\'s records acked of those appended and still pending after the drain (must be equal, and 0)';

/** The spool summary for the terminal, or `''` when no `deferred-spool` route ran. */
export function renderSpoolText(rows: readonly ResultRow[]): string {
  const body = spoolSummary(rows);
  if (body.length === 0) return '';
  const widths = SPOOL_HEADERS.map((h, i) => Math.max(h.length, ...body.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((t, i) => (i < 2 || i === c.length - 1 ? t.padEnd(widths[i]) : t.padStart(widths[i]))).join('  ').trimEnd();
  return [`Disk spool (${SPOOL_NOTE}):`, line(SPOOL_HEADERS), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The spool summary as a Markdown table, or `''` when no `deferred-spool` route ran. */
export function renderSpoolMarkdown(rows: readonly ResultRow[]): string {
  const body = spoolSummary(rows);
  if (body.length === 0) return '';
  const last = SPOOL_HEADERS.length - 1;
  return [
    `| ${SPOOL_HEADERS.join(' | ')} |`,
    `| ${SPOOL_HEADERS.map((_, i) => (i < 2 || i === last ? '---' : '---:')).join(' | ')} |`,
    ...body.map((c) => `| ${c.map((t) => t.replace(/\|/g, '\\|')).join(' | ')} |`),
  ].join('\n');
}

/** `results/latest.json`: the list of rows (each with its individual runs), for other tools. */
export function renderJson(rows: readonly ResultRow[]): string {
  return `${JSON.stringify(sortRows(rows), null, 2)}\n`;
}

/** Compression rows: adapter, then identity / gzip-6 / br-11. */
function sortCompression(rows: readonly CompressionRow[]): CompressionRow[] {
  const order = ['identity', 'gzip-6', 'br-11'];
  const adapters = [...new Set(rows.map((r) => r.adapter))];
  return [...rows].sort((a, b) => adapters.indexOf(a.adapter) - adapters.indexOf(b.adapter) || order.indexOf(a.encoding) - order.indexOf(b.encoding));
}

const COMPRESSION_HEADERS = ['adapter', 'encoding', 'body bytes', 'req/s', 'avg ms', 'p99 ms', 'CPU µs/req', 'handler ms', 'send ms', 'items delivered/expected'];

function compressionCells(r: CompressionRow): string[] {
  return [
    r.adapter,
    r.encoding,
    formatNumber(r.responseBytes, 0),
    formatNumber(r.reqPerSec, r.reqPerSec < 100 ? 1 : 0),
    formatNumber(r.latencyAvgMs),
    formatNumber(r.latencyP99Ms, 0),
    formatNumber(r.cpuUsPerRequest, 0),
    formatNumber(r.handlerMsAvg, 3),
    formatNumber(r.sendMsAvg, 2),
    `${r.itemsDelivered}/${r.itemsExpected}`,
  ];
}

/** The compression scenario as a plain-text table. */
export function renderCompressionTable(rows: readonly CompressionRow[]): string {
  const body = sortCompression(rows).map(compressionCells);
  const widths = COMPRESSION_HEADERS.map((h, i) => Math.max(h.length, ...body.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((t, i) => (i < 2 ? t.padEnd(widths[i]) : t.padStart(widths[i]))).join('  ').trimEnd();
  return [line(COMPRESSION_HEADERS), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The compression scenario as a Markdown table. */
export function renderCompressionMarkdown(rows: readonly CompressionRow[]): string {
  return [
    `| ${COMPRESSION_HEADERS.join(' | ')} |`,
    `| ${COMPRESSION_HEADERS.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`,
    ...sortCompression(rows).map((r) => `| ${compressionCells(r).join(' | ')} |`),
  ].join('\n');
}

/** `results/latest-compression.json`. */
export function renderCompressionJson(rows: readonly CompressionRow[]): string {
  return `${JSON.stringify(sortCompression(rows), null, 2)}\n`;
}

/**
 * One line of figures per scenario × adapter with a `deferred` route: its req/s over the plain,
 * blocking, article-tap and event-emitter routes' (paired per repeat), the p99 latency of the deferred,
 * blocking and event-emitter routes (ms, to 0.1) and the deferred route's event-loop delay p99.
 * `sim5 fastify: deferred ÷ plain 0.81×, ÷ blocking 4.77×, …`; a route not run is left out.
 */
export function summaryLines(rows: readonly ResultRow[]): string[] {
  return computeRatios(rows).flatMap((r) => {
    const get = (v: Variant) => find(rows, r.scenario, r.adapter, v);
    const deferred = get('deferred');
    if (!deferred) return [];
    const ratios = (
      [
        ['plain', r.deferredVsPlain],
        ['blocking', r.deferredVsBlocking],
        ['article-tap', r.deferredVsArticleTap],
        ['event-emitter', r.deferredVsEventEmitter],
      ] as Array<[string, number | undefined]>
    )
      .filter(([, value]) => value !== undefined)
      .map(([peer, value], i) => `${i === 0 ? 'deferred ÷ ' : '÷ '}${peer} ${times(value)}`);
    const p99 = (['deferred', 'blocking', 'event-emitter'] as Variant[])
      .map((v) => [v, get(v)?.latencyP99Ms] as const)
      .filter(([, ms]) => ms !== undefined && Number.isFinite(ms))
      .map(([v, ms]) => `${v} ${formatNumber(ms!, 1)} ms`);
    const parts = [
      ratios.join(', '),
      p99.length > 0 ? `p99 ${p99.join(', ')}` : '',
      deferred.loopDelayP99Ms !== undefined ? `loop delay p99 ${formatNumber(deferred.loopDelayP99Ms, 1)} ms` : '',
    ].filter((x) => x !== '');
    const packed = get('deferred-packed')
      ? [
          `${r.scenario} ${r.adapter} (packJobs): deferred-packed ÷ plain ${times(r.deferredPackedVsPlain)}, ÷ blocking ${times(r.deferredPackedVsBlocking)}, ` +
            `÷ article-tap ${times(r.deferredPackedVsArticleTap)}, ÷ event-emitter ${times(r.deferredPackedVsEventEmitter)}; ` +
            `p99 ${formatNumber(get('deferred-packed')!.latencyP99Ms, 1)} ms`,
        ]
      : [];
    return [`${r.scenario} ${r.adapter}: ${parts.join('; ')}`, ...packed];
  });
}

/** What the delivery section counts, said once above its table. */
export const DELIVERY_NOTE =
  'Per scenario and adapter, the routes that hand items on — `deferred`, `deferred-offload`, `deferred-spool`, `deferred-packed` and, as the baseline, `blocking` — ' +
  'with their items delivered over expected, summed over the repeats. A route passes when every item arrived and none was lost, ' +
  "the destination's own count agrees where it has one (receiver records, queued jobs, table rows, stream entries), the server saw no " +
  'unhandled rejection, no request failed or answered other than 2xx, and, on `deferred-spool`, every record was acked with none left pending after the drain. ' +
  'A failed route is named with what fell short.';

/** The `## Delivery` section of `latest.md`: heading, note and table. */
export function renderDeliverySection(checks: readonly DeliveryCheck[]): string {
  return [`## ${DELIVERY_TITLE}`, '', DELIVERY_NOTE, '', renderDelivery(checks)].join('\n');
}

/**
 * `latest.md` with its delivery section re-rendered from `rows` (its `latest.json`): the section that
 * starts at a `## Delivery` heading — or at the heading of an older report's threshold section — up to
 * the next `## ` heading is replaced; everything else (how it was run, the table) is kept as it was.
 * Unchanged when the report has no such section.
 */
export function replaceDeliverySection(markdown: string, rows: readonly ResultRow[], oldTitles: readonly string[] = ['Checks']): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => [DELIVERY_TITLE, ...oldTitles].some((t) => l === `## ${t}`));
  if (start < 0) return markdown;
  const next = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  const end = next < 0 ? lines.length : next;
  const section = renderDeliverySection(checkDelivery(rows)).split('\n');
  return [...lines.slice(0, start), ...section, ...(next < 0 ? [''] : ['']), ...lines.slice(end)].join('\n');
}

/** `results/latest.md`: how it was run, the chart, the table, the delivery checks, what was skipped. */
export function renderMarkdown(report: BenchReport, svgFileName: string): string {
  const { machine, options } = report;
  const lines = [
    '# nestjs-deferred-work benchmark — latest run',
    '',
    `Run ${report.startedAt} → ${report.finishedAt} on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node} (${machine.platform}), ` +
      `load average at start ${machine.loadAvg.map((l) => l.toFixed(2)).join(' / ')}.`,
    '',
    `Options: ${options.duration} s per run, ${options.connections} connections, ${options.repeats} repeat${options.repeats === 1 ? '' : 's'} per variant ` +
      `(variants alternating), ${options.warmup} s warm-up per variant, adapters ${options.adapters.join(' + ')}, ` +
      `Redis proxy round trip ${options.proxyRttMs} ms. Reproduce with \`pnpm bench\` from the repository root.`,
    '',
    'Values are medians over the repeats (items are summed). *CPU µs/req* is the server process\'s own ' +
      '`process.cpuUsage()` over the run and the drain after it, divided by the requests it handled: the whole ' +
      'process, worker threads included. *Worker CPU µs/req* is the share of the sink worker threads ' +
      '(`deferred-offload` only: the growth of `stats().sinks[*].host.cpuMs`, their CPU time read from `/proc/thread-self/schedstat`, × 1000 ÷ requests; 0 elsewhere) ' +
      'and *request-thread CPU µs/req* the server main thread\'s own CPU, read the same way in the server (where that file is missing: the process\'s CPU less the workers\'; ' +
      'the rest of the process — V8\'s helper threads, the workers\' garbage collection — is in neither column but in *CPU µs/req*). ' +
      '*p50* and *p99* are of the 2xx responses\' latencies as autocannon timed them, to 0.1 ms. ' +
      '*÷ blocking*, *÷ plain*, *÷ article-tap* and *÷ event-emitter* are the deferred route\'s req/s over those routes\', ' +
      'paired within each repeat (the routes of one repeat run back to back) and the median of those ratios taken ' +
      '(on `deferred-offload` rows, that route\'s, and *÷ deferred* its req/s over the in-process deferred route\'s; ' +
      'on `deferred-spool` rows, *÷ plain* and *÷ deferred* of the spooled route, and *fsyncs/s* the fsyncs its disk spool made per measured second). ' +
      '*Items delivered/expected*: for `deferred`, `deferred-offload` and `deferred-spool` from `stats()`; for `blocking`, `article-tap` and `event-emitter` ' +
      'the side-effects that completed (after a bounded wait for those still running) over the requests handled.',
    '',
    `![req/s and CPU per request by scenario and variant](${svgFileName})`,
    '',
    renderMarkdownTable(report.rows),
  ];
  const redisRows = sortRows(report.rows).filter(
    (r) => r.redisCpuUsPerRequest !== undefined && (r.variant === 'blocking' || LIBRARY_ROUTES.includes(r.variant)),
  );
  if (redisRows.length > 0) {
    lines.push(
      '',
      'Redis runs on the same cores; its own CPU per request (`INFO cpu`) in the Bull, BullMQ and Redis Stream scenarios: ' +
        redisRows.map((r) => `${r.scenario} ${r.adapter} ${r.variant} ${formatNumber(r.redisCpuUsPerRequest!, 0)} µs`).join(', ') +
        '.',
    );
  }
  // an offloaded route's request thread does at least what plain's does: below it (or below 0), the worker share is overstated
  const overstated = sortRows(report.rows).filter((r) => {
    const plain = report.rows.find((p) => p.scenario === r.scenario && p.adapter === r.adapter && p.variant === 'plain');
    return r.workerCpuUsPerRequest > 0 && (r.requestThreadCpuUsPerRequest < 0 || (plain !== undefined && r.requestThreadCpuUsPerRequest < plain.requestThreadCpuUsPerRequest));
  });
  if (overstated.length > 0) {
    lines.push(
      '',
      `**Worker CPU overstated** in ${overstated.map((r) => `${r.scenario} ${r.adapter} ${r.variant}`).join(', ')}: the request-thread ` +
        'figure left after subtracting the worker\'s share is below the plain route\'s (or below 0), which the offloaded route cannot ' +
        'really be (e.g. `cpuMs` unavailable, so the busy *wall* time `activeMs` was used, which on a machine with more runnable ' +
        'threads than cores includes time spent waiting for a core).',
    );
  }
  const clients = clientCpuPerJob(report.rows);
  if (clients.length > 0) {
    lines.push(
      '',
      `*Client CPU per job* (${CLIENT_CPU_PER_JOB_NOTE}):`,
      '',
      ...clients.map((c) => `- ${c.adapter}: ${clientCpuPerJobLine(c)}`),
    );
  }
  const spool = renderSpoolMarkdown(report.rows);
  if (spool) lines.push('', '## Disk spool', '', `Per scenario and adapter, ${SPOOL_NOTE}.`, '', spool);
  const summary = summaryLines(report.rows);
  if (summary.length > 0) {
    lines.push(
      '',
      '## Summary',
      '',
      'Per scenario and adapter, the deferred route against the others: req/s ratios (paired per repeat), p99 latencies and its event-loop delay p99.',
      '',
      ...summary.map((line) => `- ${line}`),
    );
  }
  lines.push('', renderDeliverySection(report.delivery));
  if (report.compression.length > 0) {
    lines.push(
      '',
      '## Response-time insight: compression',
      '',
      'One route returns about 100 kB of JSON from a handler that does nothing, behind response compression ' +
        'configured with gzip level 6 and Brotli quality 11 (Express `compression`, Fastify `@fastify/compress`); ' +
        'the client\'s `Accept-Encoding` picks the encoding. The route has `@AfterResponse({ timing: true })`: ' +
        '*handler ms* is the time until the handler returned and *send ms* the time from then until the response ' +
        'finished (serialisation, compression, writing), both from `stats().routes`. The handler stays fast; ' +
        'the sending is where Brotli 11 spends its time.',
      '',
      renderCompressionMarkdown(report.compression),
    );
  }
  if (report.skipped.length > 0) {
    lines.push('', '## Skipped', '');
    for (const s of report.skipped) lines.push(`- **${s.scenario}** (${s.scenarioLabel}): ${s.reason}`);
  }
  lines.push(
    '',
    '## Variants',
    '',
    '- `plain`: the route without side-effect or interceptor — the ceiling.',
    '- `noop-interceptor`: `plain` plus a pass-through interceptor — what any Nest interceptor costs.',
    '- `blocking`: the side-effect awaited in the handler, as most apps do today.',
    '- `deferred`: the same side-effect through `@AfterResponse()` and `@Deferred()`; it runs after the response finished.',
    '- `deferred-offload` (Bull, BullMQ and HTTP-log scenarios): the same deferred route, routed to the offloaded twin of the scenario\'s sink ' +
      '(`BullSink.offloaded()`, `BullMqSink.offloaded()`, `HttpSink.offloaded()`, same queue or receiver): the client work runs in a worker thread.',
    '- `deferred-spool` (`bull-local`, `http-log` and `mix`): the same deferred route, routed to a twin of the scenario\'s sink (same queue, receiver or ' +
      'kind of memory sink) behind the module\'s `spool` option (a fresh temporary directory per server, default `syncIntervalMs`): each item is ' +
      'serialised and written to the spool\'s segment file when accepted, fsynced by group commit, and acked once delivered.',
    '- `deferred-packed` (`realistic`, `bull-local`, `bullmq-local`): the same deferred route, routed to a twin of the scenario\'s queue sink with `packJobs: true` ' +
      '(same queue): the jobs of a write are added as one queue job holding up to 100 of them, which the worker reads with `unpackJob()`. ' +
      'The destination holds packs, not jobs, so its own count is not compared; the queue\'s conformance tests read every item back.',
    '- `article-tap`: a route interceptor returning `next.handle().pipe(tap(async () => { await effect(); }))`, as the published articles write it.',
    '- `event-emitter`: the handler emits `<scenario>.effect` (`@nestjs/event-emitter`); an `@OnEvent(..., { async: true })` listener awaits the effect.',
    '',
  );
  return lines.join('\n');
}
