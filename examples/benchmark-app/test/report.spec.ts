import {
  aggregateRuns,
  clientCpuPerJob,
  clientCpuPerJobLine,
  renderClientCpuPerJobText,
  renderCompressionJson,
  renderCompressionTable,
  checkDelivery,
  computeRatios,
  pairedRatio,
  percentile,
  cpuSplit,
  median,
  ratio,
  renderJson,
  renderMarkdown,
  renderMarkdownTable,
  renderSpoolMarkdown,
  renderSpoolText,
  renderTable,
  renderDelivery,
  renderDeliveryText,
  replaceDeliverySection,
  spoolSummary,
  summaryLines,
} from '../src/bench/report';
import { escapeXml, niceMax, renderSvg } from '../src/bench/svg';
import type { Adapter, BenchReport, CompressionRow, ResultRow, RunSample, ScenarioId, SpoolFigures, Variant } from '../src/bench/types';

/** The CPU split of a fixture: no worker unless given, the request thread the rest. */
function split(overrides: { cpuUsPerRequest?: number; workerCpuUsPerRequest?: number; requestThreadCpuUsPerRequest?: number }, cpu = 100) {
  const cpuUsPerRequest = overrides.cpuUsPerRequest ?? cpu;
  const workerCpuUsPerRequest = overrides.workerCpuUsPerRequest ?? 0;
  return { workerCpuUsPerRequest, requestThreadCpuUsPerRequest: overrides.requestThreadCpuUsPerRequest ?? cpuUsPerRequest - workerCpuUsPerRequest };
}

function sample(overrides: Partial<RunSample> = {}): RunSample {
  return {
    requests: 1000,
    serverRequests: 1005,
    durationS: 1,
    reqPerSec: 1000,
    latencyAvgMs: 10,
    latencyP50Ms: 9,
    latencyP99Ms: 20,
    cpuUsPerRequest: 100,
    errors: 0,
    non2xx: 0,
    itemsExpected: 0,
    itemsDelivered: 0,
    itemsLost: 0,
    ...split(overrides),
    ...overrides,
  };
}

function row(scenario: ScenarioId, adapter: Adapter, variant: Variant, overrides: Partial<ResultRow> = {}): ResultRow {
  return {
    scenario,
    scenarioLabel: `label of ${scenario}`,
    adapter,
    variant,
    connections: 10,
    requests: 1000,
    reqPerSec: 1000,
    latencyAvgMs: 10,
    latencyP50Ms: 9,
    latencyP99Ms: 20,
    cpuUsPerRequest: 100,
    itemsExpected: 0,
    itemsDelivered: 0,
    itemsLost: 0,
    errors: 0,
    non2xx: 0,
    repeats: 1,
    durationS: 1,
    runs: [],
    ...split(overrides),
    ...overrides,
  };
}

/**
 * A full, fixed result set for one adapter: every check met. `offload`: the req/s of the
 * `deferred-offload` route (scenarios with an offloadable sink), 200 µs CPU/req of which 75 in the worker.
 * `spool`: the req/s of the `deferred-spool` route (the disk spool), 150 µs CPU/req (146 on the request thread),
 * 10 fsyncs/s, every spooled item acked.
 */
function passingRows(adapter: Adapter = 'express'): ResultRow[] {
  const scenario = (
    id: ScenarioId,
    blocking: number,
    deferred: number,
    { items = 1, plain = 8000, offload, spool }: { items?: number; plain?: number; offload?: number; spool?: number } = {},
  ): ResultRow[] => [
    row(id, adapter, 'plain', { reqPerSec: plain, cpuUsPerRequest: 120 }),
    row(id, adapter, 'noop-interceptor', { reqPerSec: 7600, cpuUsPerRequest: 130 }),
    row(id, adapter, 'blocking', { reqPerSec: blocking, cpuUsPerRequest: 150, itemsExpected: 100 * items, itemsDelivered: 100 * items }),
    row(id, adapter, 'deferred', { reqPerSec: deferred, cpuUsPerRequest: 140, itemsExpected: 200 * items, itemsDelivered: 200 * items }),
    ...(offload === undefined
      ? []
      : [
          row(id, adapter, 'deferred-offload', {
            reqPerSec: offload,
            cpuUsPerRequest: 200,
            workerCpuUsPerRequest: 75,
            itemsExpected: 210 * items,
            itemsDelivered: 210 * items,
          }),
        ]),
    ...(spool === undefined
      ? []
      : [
          row(id, adapter, 'deferred-spool', {
            reqPerSec: spool,
            cpuUsPerRequest: 150,
            requestThreadCpuUsPerRequest: 146,
            itemsExpected: 190 * items,
            itemsDelivered: 190 * items,
            spool: spoolFigures(190 * items),
          }),
        ]),
    row(id, adapter, 'article-tap', { reqPerSec: deferred / 2, cpuUsPerRequest: 160, itemsExpected: 150 * items, itemsDelivered: 150 * items }),
    row(id, adapter, 'event-emitter', { reqPerSec: deferred / 4, cpuUsPerRequest: 170, itemsExpected: 120 * items, itemsDelivered: 120 * items }),
  ];
  return [
    ...scenario('sim5', 1600, 7000, { plain: 7500 }),
    ...scenario('sim25', 380, 6800, { plain: 7500 }),
    ...scenario('bull-local', 5000, 6000, { offload: 7000, spool: 6800 }),
    ...scenario('bull-proxy', 300, 6500, { offload: 7000 }),
    ...scenario('http-log', 3000, 6900, { offload: 7300, spool: 6210 }),
    ...scenario('mix', 7000, 7100, { items: 5, plain: 7500, spool: 6390 }),
    ...scenario('sim5-tail', 1500, 7000),
    ...scenario('bullmq-local', 5200, 6400, { offload: 7000 }),
    ...scenario('bullmq-proxy', 310, 6200, { offload: 7000 }),
  ];
}

/** The spool figures of a `deferred-spool` row whose `items` were all appended and acked, at 10 fsyncs/s. */
function spoolFigures(items: number, overrides: Partial<SpoolFigures> = {}): SpoolFigures {
  return { fsyncs: 60, fsyncsPerSec: 10, appended: items, acked: items, pending: 0, syncErrors: 0, refused: 0, failed: 0, ...overrides };
}

/** The delivery checks that failed, as `scenario/adapter/variant: measured`. */
const failedDelivery = (rows: readonly ResultRow[]) =>
  checkDelivery(rows)
    .filter((c) => !c.pass)
    .map((c) => `${c.scenario}/${c.adapter}/${c.variant}: ${c.measured}`);

describe('median and ratio', () => {
  it('takes the middle value, or the mean of the two middle ones, ignoring non-finite values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, Number.NaN])).toBe(5);
    expect(median([])).toBeNaN();
  });

  it('divides, or gives undefined when a side is missing or the divisor is 0', () => {
    expect(ratio(300, 100)).toBe(3);
    expect(ratio(300, 0)).toBeUndefined();
    expect(ratio(undefined, 5)).toBeUndefined();
    expect(ratio(Number.NaN, 5)).toBeUndefined();
  });
});

describe('aggregateRuns', () => {
  it('takes medians of rates and latencies and sums the counts', () => {
    const runs = [
      sample({ reqPerSec: 900, latencyP99Ms: 30, cpuUsPerRequest: 90, itemsExpected: 10, itemsDelivered: 10, requests: 900, itemsAtDestination: 10 }),
      sample({ reqPerSec: 1200, latencyP99Ms: 10, cpuUsPerRequest: 130, itemsExpected: 12, itemsDelivered: 11, itemsLost: 1, requests: 1200, itemsAtDestination: 11 }),
      sample({ reqPerSec: 1000, latencyP99Ms: 20, cpuUsPerRequest: 100, itemsExpected: 8, itemsDelivered: 8, requests: 1000, errors: 2, itemsAtDestination: 8 }),
    ];
    const aggregated = aggregateRuns({ scenario: 'sim5', scenarioLabel: 'x', adapter: 'fastify', variant: 'deferred', connections: 10 }, runs);
    expect(aggregated).toMatchObject({
      scenario: 'sim5',
      adapter: 'fastify',
      variant: 'deferred',
      connections: 10,
      reqPerSec: 1000,
      latencyP99Ms: 20,
      cpuUsPerRequest: 100,
      requests: 3100,
      itemsExpected: 30,
      itemsDelivered: 29,
      itemsLost: 1,
      itemsAtDestination: 29,
      errors: 2,
      repeats: 3,
    });
    expect(aggregated.runs).toHaveLength(3);
    expect(aggregateRuns(aggregated, [sample(), sample({ itemsAtDestination: 4 })]).itemsAtDestination).toBeUndefined();
    expect(aggregated.unhandledRejections).toBeUndefined();
    expect(aggregateRuns(aggregated, [sample({ unhandledRejections: 0 }), sample({ unhandledRejections: 3 })]).unhandledRejections).toBe(3);
  });

  it('sums the items dropped at a full queue, and leaves the field out when none was', () => {
    const key = { scenario: 'rabbitmq' as const, scenarioLabel: 'x', adapter: 'fastify' as const, variant: 'deferred' as const, connections: 10 };
    const dropped = aggregateRuns(key, [sample({ itemsLost: 2 }), sample({ itemsLost: 7, itemsDropped: 5 }), sample({ itemsLost: 1, itemsDropped: 1 })]);
    expect(dropped).toMatchObject({ itemsLost: 10, itemsDropped: 6 });
    expect('itemsDropped' in aggregateRuns(key, [sample(), sample({ itemsLost: 3 })])).toBe(false);
  });
});

describe('cpuSplit: request thread and sink workers', () => {
  it("splits the process CPU into the workers' share (Δ activeMs × 1000 ÷ requests) and the request thread's", () => {
    // 2,000,000 µs of process CPU over 10,000 requests, 600 ms of it in the sink worker
    expect(cpuSplit({ cpuUs: 2_000_000, workerActiveMs: 600, serverRequests: 10_000, hasWorker: true })).toEqual({
      cpuUsPerRequest: 200,
      workerCpuUsPerRequest: 60,
      requestThreadCpuUsPerRequest: 140,
    });
  });

  it('gives a variant without a worker no worker share, whatever an idle worker did meanwhile', () => {
    expect(cpuSplit({ cpuUs: 1_200_000, workerActiveMs: 3, serverRequests: 10_000, hasWorker: false })).toEqual({
      cpuUsPerRequest: 120,
      workerCpuUsPerRequest: 0,
      requestThreadCpuUsPerRequest: 120,
    });
  });

  it('is NaN without requests and never counts a negative worker delta', () => {
    const none = cpuSplit({ cpuUs: 5000, workerActiveMs: 10, serverRequests: 0, hasWorker: true });
    expect(none.cpuUsPerRequest).toBeNaN();
    expect(none.workerCpuUsPerRequest).toBeNaN();
    expect(none.requestThreadCpuUsPerRequest).toBeNaN();
    expect(cpuSplit({ cpuUs: 100_000, workerActiveMs: -1, serverRequests: 1000, hasWorker: true })).toEqual({
      cpuUsPerRequest: 100,
      workerCpuUsPerRequest: 0,
      requestThreadCpuUsPerRequest: 100,
    });
  });

  it('aggregates both shares as medians over the repeats', () => {
    const runs = [
      sample({ cpuUsPerRequest: 200, workerCpuUsPerRequest: 60 }),
      sample({ cpuUsPerRequest: 260, workerCpuUsPerRequest: 90 }),
      sample({ cpuUsPerRequest: 230, workerCpuUsPerRequest: 70 }),
    ];
    const row = aggregateRuns({ scenario: 'bull-local', scenarioLabel: 'x', adapter: 'fastify', variant: 'deferred-offload', connections: 10 }, runs);
    expect(row).toMatchObject({ cpuUsPerRequest: 230, workerCpuUsPerRequest: 70, requestThreadCpuUsPerRequest: 160 });
  });
});

describe('computeRatios', () => {
  it('gives deferred ÷ blocking, deferred ÷ plain and the CPU ratio deferred ÷ noop per scenario and adapter', () => {
    const rows = [
      row('sim25', 'express', 'plain', { reqPerSec: 8000 }),
      row('sim25', 'express', 'noop-interceptor', { cpuUsPerRequest: 125 }),
      row('sim25', 'express', 'blocking', { reqPerSec: 400, latencyP99Ms: 40 }),
      row('sim25', 'express', 'deferred', { reqPerSec: 6000, cpuUsPerRequest: 150, latencyP99Ms: 4 }),
      row('sim25', 'fastify', 'deferred', { reqPerSec: 9000 }),
    ];
    const ratios = computeRatios(rows);
    expect(ratios).toHaveLength(2);
    expect(ratios[0]).toEqual({
      scenario: 'sim25',
      adapter: 'express',
      deferredVsBlocking: 15,
      deferredVsPlain: 0.75,
      deferredVsArticleTap: undefined,
      deferredVsEventEmitter: undefined,
      cpuDeferredVsNoop: 1.2,
      p99BlockingVsDeferred: 10,
    });
    expect(ratios[1]).toMatchObject({ adapter: 'fastify', deferredVsBlocking: undefined, deferredVsPlain: undefined });
  });

  it('gives deferred ÷ article-tap and deferred ÷ event-emitter', () => {
    const rows = [
      row('sim5-tail', 'express', 'deferred', { reqPerSec: 6000 }),
      row('sim5-tail', 'express', 'article-tap', { reqPerSec: 4000 }),
      row('sim5-tail', 'express', 'event-emitter', { reqPerSec: 5000 }),
    ];
    expect(computeRatios(rows)[0]).toMatchObject({ deferredVsArticleTap: 1.5, deferredVsEventEmitter: 1.2 });
  });
});

describe('paired ratios and fine percentiles', () => {
  it('takes the median of the per-repeat ratios, not the ratio of the medians', () => {
    // repeat 1: the machine fast for both; repeat 2 and 3 slower. Per repeat: 1.2, 1.1, 1.25.
    const deferred = row('bull-local', 'fastify', 'deferred', {
      reqPerSec: 1100,
      runs: [sample({ reqPerSec: 1200 }), sample({ reqPerSec: 660 }), sample({ reqPerSec: 1000 })],
    });
    const blocking = row('bull-local', 'fastify', 'blocking', {
      reqPerSec: 800,
      runs: [sample({ reqPerSec: 1000 }), sample({ reqPerSec: 600 }), sample({ reqPerSec: 800 })],
    });
    expect(pairedRatio(deferred, blocking)).toBeCloseTo(1.2, 10);
    expect(computeRatios([deferred, blocking])[0].deferredVsBlocking).toBeCloseTo(1.2, 10);
    // The ratio of the medians would be 1000 / 800 = 1.25.
  });

  it('falls back to the ratio of the medians when the rows do not have the same repeats', () => {
    const a = row('mix', 'express', 'deferred', { reqPerSec: 900, runs: [sample({ reqPerSec: 900 })] });
    const b = row('mix', 'express', 'plain', { reqPerSec: 1000, runs: [] });
    expect(pairedRatio(a, b)).toBeCloseTo(0.9, 10);
    expect(pairedRatio(a, undefined)).toBeUndefined();
  });

  it('percentile: nearest rank of ascending values, NaN for none', () => {
    const values = Float64Array.from({ length: 1000 }, (_, i) => (i + 1) / 10); // 0.1 … 100.0 ms
    expect(percentile(values, 0.99)).toBeCloseTo(99.0, 10);
    expect(percentile(values, 0.5)).toBeCloseTo(50.0, 10);
    expect(percentile([3.25], 0.99)).toBe(3.25);
    expect(percentile([], 0.99)).toBeNaN();
  });
});

describe('computeRatios: deferred-offload', () => {
  it('gives deferred-offload ÷ plain, ÷ deferred, ÷ article-tap and ÷ event-emitter, undefined where the scenario has no such route', () => {
    const rows = [
      row('bull-local', 'fastify', 'plain', { reqPerSec: 10000 }),
      row('bull-local', 'fastify', 'deferred', { reqPerSec: 5000 }),
      row('bull-local', 'fastify', 'deferred-offload', { reqPerSec: 8000 }),
      row('bull-local', 'fastify', 'article-tap', { reqPerSec: 4000 }),
      row('bull-local', 'fastify', 'event-emitter', { reqPerSec: 6400 }),
      row('sim5', 'fastify', 'plain', { reqPerSec: 10000 }),
      row('sim5', 'fastify', 'deferred', { reqPerSec: 9000 }),
    ];
    const [bull, sim5] = computeRatios(rows);
    expect(bull).toMatchObject({
      deferredVsPlain: 0.5,
      deferredOffloadVsPlain: 0.8,
      deferredOffloadVsDeferred: 1.6,
      deferredOffloadVsArticleTap: 2,
      deferredOffloadVsEventEmitter: 1.25,
    });
    expect(sim5).toMatchObject({ deferredVsPlain: 0.9, deferredOffloadVsPlain: undefined, deferredOffloadVsDeferred: undefined });
  });
});

describe('computeRatios and summaryLines: deferred-packed', () => {
  it('gives deferred-packed ÷ blocking, ÷ plain, ÷ article-tap, ÷ event-emitter and ÷ deferred, and a summary line of its own', () => {
    const rows = [
      row('bullmq-local', 'fastify', 'plain', { reqPerSec: 10000 }),
      row('bullmq-local', 'fastify', 'blocking', { reqPerSec: 4000 }),
      row('bullmq-local', 'fastify', 'deferred', { reqPerSec: 3000 }),
      row('bullmq-local', 'fastify', 'deferred-packed', { reqPerSec: 8000 }),
      row('bullmq-local', 'fastify', 'article-tap', { reqPerSec: 2000 }),
      row('bullmq-local', 'fastify', 'event-emitter', { reqPerSec: 5000 }),
    ];
    const [ratios] = computeRatios(rows);
    expect(ratios).toMatchObject({
      deferredVsBlocking: 0.75,
      deferredPackedVsBlocking: 2,
      deferredPackedVsPlain: 0.8,
      deferredPackedVsArticleTap: 4,
      deferredPackedVsEventEmitter: 1.6,
    });
    expect(ratios.deferredPackedVsDeferred).toBeCloseTo(8000 / 3000, 6);
    const lines = summaryLines(rows);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^bullmq-local fastify \(packJobs\): deferred-packed ÷ plain 0\.80×, ÷ blocking 2\.00×, ÷ article-tap 4\.00×, ÷ event-emitter 1\.60×; p99 /);
  });
});

describe('deferred-spool (the disk spool)', () => {
  const spoolSample = (fsyncsPerSec: number, overrides: Partial<RunSample['spool'] & object> = {}): RunSample['spool'] => ({
    fsyncs: fsyncsPerSec * 2,
    fsyncsPerSec,
    appended: 100,
    acked: 100,
    pending: 0,
    syncErrors: 0,
    refused: 0,
    failed: 0,
    ...overrides,
  });

  it('aggregates the spool counters: sums, the median fsyncs/s and the largest pending; none for a route without a spool', () => {
    const runs = [
      sample({ spool: spoolSample(9) }),
      sample({ spool: spoolSample(12, { pending: 3, acked: 97 }) }),
      sample({ spool: spoolSample(10, { syncErrors: 1 }) }),
    ];
    const aggregated = aggregateRuns({ scenario: 'bull-local', scenarioLabel: 'x', adapter: 'express', variant: 'deferred-spool', connections: 10 }, runs);
    expect(aggregated.spool).toEqual({ fsyncs: 62, fsyncsPerSec: 10, appended: 300, acked: 297, pending: 3, syncErrors: 1, refused: 0, failed: 0 });
    expect(aggregateRuns(aggregated, [sample(), sample()]).spool).toBeUndefined();
  });

  it("aggregates the event loop's delay: the median of the runs' p99, the largest max; none from a server without it", () => {
    const key = { scenario: 'sim5', scenarioLabel: 'x', adapter: 'fastify', variant: 'deferred', connections: 10 } as const;
    const runs = [
      sample({ loopDelayP99Ms: 1.5, loopDelayMaxMs: 4 }),
      sample({ loopDelayP99Ms: 0.5, loopDelayMaxMs: 9 }),
      sample({ loopDelayP99Ms: 1, loopDelayMaxMs: 2 }),
    ];
    expect(aggregateRuns(key, runs)).toMatchObject({ loopDelayP99Ms: 1, loopDelayMaxMs: 9 });
    expect(aggregateRuns(key, [sample()]).loopDelayP99Ms).toBeUndefined();
  });

  it('gives deferred-spool ÷ plain and ÷ deferred, undefined where the scenario has no such route', () => {
    const [bull, sim5] = computeRatios([
      row('bull-local', 'fastify', 'plain', { reqPerSec: 10000 }),
      row('bull-local', 'fastify', 'deferred', { reqPerSec: 5000 }),
      row('bull-local', 'fastify', 'deferred-spool', { reqPerSec: 4500 }),
      row('sim5', 'fastify', 'plain', { reqPerSec: 10000 }),
      row('sim5', 'fastify', 'deferred', { reqPerSec: 9000 }),
    ]);
    expect(bull).toMatchObject({ deferredVsPlain: 0.5, deferredSpoolVsPlain: 0.45, deferredSpoolVsDeferred: 0.9 });
    // the spooled route is no candidate for the checks that take the better deferred route
    expect(bull.deferredOffloadVsPlain).toBeUndefined();
    expect(sim5).toMatchObject({ deferredSpoolVsPlain: undefined, deferredSpoolVsDeferred: undefined });
  });

  it('checks the deferred-spool deliveries: every spooled item acked and none left pending', () => {
    expect(failedDelivery(passingRows())).toEqual([]);
    const pending = passingRows().map((r) =>
      r.scenario === 'http-log' && r.variant === 'deferred-spool' ? { ...r, spool: spoolFigures(190, { acked: 188, pending: 2 }) } : r,
    );
    expect(failedDelivery(pending)).toEqual(['http-log/express/deferred-spool: 190 of 190, spool: 190 appended, 188 acked, 2 pending']);
    expect(renderTable(pending)).toContain('190/190 (spool: 188 of 190 acked, 2 pending!)');
    const refused = passingRows().map((r) =>
      r.scenario === 'mix' && r.variant === 'deferred-spool'
        ? { ...r, itemsDelivered: 940, itemsLost: 10, spool: spoolFigures(940, { refused: 10 }) }
        : r,
    );
    expect(failedDelivery(refused)).toEqual([
      'mix/express/deferred-spool: 940 of 950, 10 lost, spool: 940 appended, 940 acked, 0 pending, 10 refused, 0 failed, 0 sync errors',
    ]);
  });
});

describe('checkDelivery', () => {
  it('passes every route that hands items on when everything was delivered, one check per scenario × adapter × route', () => {
    const checks = checkDelivery([...passingRows('express'), ...passingRows('fastify')]);
    // per adapter: blocking and deferred in 9 scenarios, deferred-offload in 5, deferred-spool in 3
    expect(checks).toHaveLength(2 * 26);
    expect(checks.every((c) => c.pass)).toBe(true);
    expect(new Set(checks.map((c) => c.variant))).toEqual(new Set(['blocking', 'deferred', 'deferred-offload', 'deferred-spool']));
    expect(checks.find((c) => c.scenario === 'mix' && c.adapter === 'fastify' && c.variant === 'deferred-spool')).toMatchObject({
      measured: '950/950, all acked',
      pass: true,
    });
  });

  it('fails a route with a lost item and names it, even when the totals match', () => {
    const rows = passingRows().map((r) => (r.scenario === 'mix' && r.variant === 'deferred' ? { ...r, itemsLost: 3 } : r));
    expect(failedDelivery(rows)).toEqual(['mix/express/deferred: 1000 of 1000, 3 lost']);
    const short = passingRows().map((r) => (r.scenario === 'http-log' && r.variant === 'deferred' ? { ...r, itemsDelivered: 199 } : r));
    expect(failedDelivery(short)).toEqual(['http-log/express/deferred: 199 of 200']);
    const offload = passingRows().map((r) =>
      r.scenario === 'http-log' && r.variant === 'deferred-offload' ? { ...r, itemsDelivered: 205, itemsLost: 5 } : r,
    );
    expect(failedDelivery(offload)).toEqual(['http-log/express/deferred-offload: 205 of 210, 5 lost']);
    const shed = passingRows().map((r) => (r.scenario === 'mix' && r.variant === 'deferred' ? { ...r, itemsDelivered: 990, itemsLost: 10, itemsDropped: 8 } : r));
    expect(failedDelivery(shed)).toEqual(["mix/express/deferred: 990 of 1000, 10 lost (8 dropped: the sink's queue was full)"]);
    const blocking = passingRows().map((r) => (r.scenario === 'sim25' && r.variant === 'blocking' ? { ...r, itemsDelivered: 90 } : r));
    expect(failedDelivery(blocking)).toEqual(['sim25/express/blocking: 90 of 100']);
  });

  it("fails a route whose destination's own count disagrees with stats()", () => {
    const rows = passingRows().map((r) =>
      r.scenario === 'bull-local' && r.variant === 'deferred' ? { ...r, itemsAtDestination: 198 } : r,
    );
    expect(failedDelivery(rows)).toEqual(['bull-local/express/deferred: 200 of 200, 198 at the destination']);
    expect(renderTable(rows)).toContain('200/200 (198 at destination!)');
    const agreeing = passingRows().map((r) => (r.scenario === 'bull-local' && r.variant === 'deferred' ? { ...r, itemsAtDestination: 200 } : r));
    expect(checkDelivery(agreeing).find((c) => c.scenario === 'bull-local' && c.variant === 'deferred')).toMatchObject({
      pass: true,
      measured: '200/200, destination agrees',
    });
  });

  it('fails a route with unhandled rejections, errors or non-2xx responses', () => {
    const rows = passingRows().map((r) => {
      if (r.scenario === 'sim5' && r.variant === 'deferred') return { ...r, unhandledRejections: 2 };
      if (r.scenario === 'sim25' && r.variant === 'deferred') return { ...r, errors: 1, non2xx: 4 };
      return r;
    });
    expect(failedDelivery(rows)).toEqual([
      'sim5/express/deferred: 200 of 200, 2 unhandled rejections',
      'sim25/express/deferred: 200 of 200, 1 error, 4 non-2xx',
    ]);
  });

  it('evaluates each adapter separately', () => {
    const rows = [...passingRows('express'), ...passingRows('fastify')].map((r) =>
      r.adapter === 'fastify' && r.scenario === 'bullmq-proxy' && r.variant === 'deferred' ? { ...r, itemsAtDestination: 190 } : r,
    );
    expect(failedDelivery(rows)).toEqual(['bullmq-proxy/fastify/deferred: 200 of 200, 190 at the destination']);
  });

  it("shows what a peer lost in its row without counting it against the library", () => {
    const rows = passingRows().map((r) =>
      r.scenario === 'http-log' && r.variant === 'article-tap' ? { ...r, itemsDelivered: 140, unhandledRejections: 10 } : r,
    );
    expect(failedDelivery(rows)).toEqual([]);
    const line = renderTable(rows)
      .split('\n')
      .find((l) => l.startsWith('http-log') && l.includes('article-tap'))!;
    expect(line).toContain('140/150 (10 unhandled rejections!)');
  });

  it('has nothing to check for a run without items', () => {
    expect(checkDelivery(passingRows().filter((r) => r.variant === 'plain' || r.variant === 'noop-interceptor'))).toEqual([]);
  });
});

describe('renderers', () => {
  const rows = passingRows();
  const report: BenchReport = {
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:06:00.000Z',
    machine: { cpus: 2, cpuModel: 'Test CPU', node: 'v20.20.0', platform: 'linux', loadAvg: [1, 0.5, 0.25] },
    options: { duration: 3, connections: 10, scenarios: ['sim5'], adapters: ['express'], repeats: 2, warmup: 1, proxyRttMs: 30 },
    rows,
    compression: [],
    skipped: [{ scenario: 'bull-proxy', scenarioLabel: 'Bull <proxy>', reason: 'no Redis' }],
    ratios: computeRatios(rows),
    delivery: checkDelivery(rows),
  };

  it('prints an aligned table with ratios on the deferred rows', () => {
    const table = renderTable(rows).split('\n');
    expect(table[0]).toMatch(/^scenario\s+adapter\s+variant\s+req\/s\s+avg ms\s+p50 ms\s+p99 ms\s+CPU µs\/req/);
    const sim25Deferred = table.find((l) => l.startsWith('sim25') && l.includes('deferred'))!;
    expect(sim25Deferred).toContain('6,800');
    expect(sim25Deferred).toContain('17.89×');
    expect(sim25Deferred).toMatch(/17\.89×\s+0\.91×\s+2\.00×\s+4\.00×$/);
    expect(table[0]).toMatch(/CPU µs\/req\s+worker CPU µs\/req\s+request-thread CPU µs\/req\s+items/);
    expect(table[0]).toMatch(/÷ blocking\s+÷ plain\s+÷ article-tap\s+÷ event-emitter\s+÷ deferred\s+fsyncs\/s\s+loop delay p99 ms$/);
    // the offloaded route: whole-process CPU, the worker's share, the rest; its ratios, and ÷ deferred
    const bullOffload = table.find((l) => l.startsWith('bull-local') && l.includes('deferred-offload'))!;
    expect(bullOffload).toMatch(/\s200\s+75\s+125\s+210\/210\s+0\.88×\s+2\.33×\s+4\.67×\s+1\.17×$/);
    expect(table.find((l) => l.startsWith('sim25') && l.includes('plain'))).toMatch(/\s120\s+0\s+120\s+-$/);
    expect(sim25Deferred).toContain('200/200');
    const sim25Blocking = table.find((l) => l.startsWith('sim25') && l.includes('blocking'))!;
    expect(sim25Blocking).not.toContain('×');
  });

  it('fills ÷ plain, ÷ deferred and fsyncs/s on the deferred-spool rows', () => {
    const table = renderTable(rows).split('\n');
    const bullSpool = table.find((l) => l.startsWith('bull-local') && l.includes('deferred-spool'))!;
    expect(bullSpool).toMatch(/\s150\s+0\s+146\s+190\/190\s+0\.85×\s+1\.13×\s+10\.0$/);
    const md = renderMarkdownTable(rows);
    expect(md).toContain('| bull-local | express | deferred-spool | **6,800** | 10.0 | 9.0 | 20.0 | 150 | 0 | 146 | 190/190 |  | 0.85× |  |  | 1.13× | 10.0 |');
    // no fsyncs/s elsewhere
    expect(md).toContain('| bull-local | express | deferred | **6,000** | 10.0 | 9.0 | 20.0 | 140 | 0 | 140 | 200/200 | **1.20×** | 0.75× | 2.00× | 4.00× |  |  |');
  });

  it('sums up the spool per scenario and adapter: ratios, fsyncs/s, CPU over the deferred route, acks', () => {
    expect(spoolSummary(rows)).toEqual([
      ['bull-local', 'express', '6,800', '0.85×', '1.13×', '10.0', '+10.0', '+6.0', '190/190', '0', 'yes'],
      ['http-log', 'express', '6,210', '0.78×', '0.90×', '10.0', '+10.0', '+6.0', '190/190', '0', 'yes'],
      ['mix', 'express', '6,390', '0.85×', '0.90×', '10.0', '+10.0', '+6.0', '950/950', '0', 'yes'],
    ]);
    const md = renderMarkdown(report, 'latest.svg');
    expect(md).toContain('## Disk spool\n');
    expect(md).toContain(renderSpoolMarkdown(rows));
    expect(md).toContain('| mix | express | 6,390 | 0.85× | 0.90× | 10.0 | +10.0 | +6.0 | 950/950 | 0 | yes |');
    expect(md).toContain('- `deferred-spool` (`bull-local`, `http-log` and `mix`)');
    const text = renderSpoolText(rows).split('\n');
    expect(text[0]).toMatch(/^Disk spool \(the `deferred-spool` route/);
    expect(text[1]).toMatch(/^scenario\s+adapter\s+req\/s\s+÷ plain\s+÷ deferred\s+fsyncs\/s/);
    expect(text[3]).toMatch(/^bull-local\s+express\s+6,800\s+0\.85×\s+1\.13×\s+10\.0\s+\+10\.0\s+\+6\.0\s+190\/190\s+0\s+yes$/);
    // nothing without a deferred-spool route
    const without = rows.filter((r) => r.variant !== 'deferred-spool');
    expect(renderSpoolText(without)).toBe('');
    expect(renderMarkdown({ ...report, rows: without }, 'latest.svg')).not.toContain('## Disk spool');
  });

  it('writes JSON as a list of rows with the fields other tools read', () => {
    const parsed = JSON.parse(renderJson(rows)) as Array<Record<string, unknown>>;
    expect(Array.isArray(parsed)).toBe(true);
    expect(parsed).toHaveLength(rows.length);
    for (const key of [
      'scenario',
      'adapter',
      'variant',
      'connections',
      'requests',
      'reqPerSec',
      'latencyAvgMs',
      'latencyP99Ms',
      'cpuUsPerRequest',
      'itemsExpected',
      'itemsDelivered',
    ]) {
      expect(parsed[0]).toHaveProperty(key);
    }
    expect(parsed[0]).toHaveProperty('workerCpuUsPerRequest', 0);
    expect(parsed[0]).toHaveProperty('requestThreadCpuUsPerRequest', 120);
    expect(parsed.map((r) => r.variant).slice(0, 6)).toEqual(['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter']);
    expect(parsed.filter((r) => r.scenario === 'bull-local').map((r) => r.variant)).toEqual([
      'plain',
      'noop-interceptor',
      'blocking',
      'deferred',
      'deferred-offload',
      'deferred-spool',
      'article-tap',
      'event-emitter',
    ]);
  });

  it('writes Markdown with the chart, the table, the delivery checks and what was skipped', () => {
    const md = renderMarkdown(report, 'latest.svg');
    expect(md).toContain('![req/s and CPU per request by scenario and variant](latest.svg)');
    expect(md).toContain(renderMarkdownTable(rows));
    expect(md).toContain('| sim25 | express | deferred | **6,800** |');
    expect(md).toContain('## Delivery\n');
    expect(md).not.toContain('## Checks');
    expect(md).toContain('| bull-local | express | deferred-offload | **7,000** | 10.0 | 9.0 | 20.0 | 200 | 75 | 125 | 210/210 |  | 0.88× | 2.33× | 4.67× | 1.17× |');
    expect(md).toContain('- `deferred-offload` (Bull, BullMQ and HTTP-log scenarios)');
    expect(md).toContain(
      '| bull-local | express | blocking 100/100; deferred 200/200; deferred-offload 210/210; deferred-spool 190/190, all acked | ok |',
    );
    expect(md).toContain('| sim5-tail | express | article-tap | 3,500 |');
    expect(md).toContain('- `event-emitter`: the handler emits');
    expect(md).toContain('**bull-proxy** (Bull <proxy>): no Redis');
    expect(md).toContain('2 × Test CPU');
  });

  it('lists the Redis CPU per request of the blocking and the three deferred Bull rows', () => {
    const redisCpu: Partial<Record<Variant, number>> = { blocking: 31.4, deferred: 12.2, 'deferred-offload': 10.6, 'deferred-spool': 12.6 };
    const withRedis = rows.map((r) => (r.scenario === 'bull-local' ? { ...r, redisCpuUsPerRequest: redisCpu[r.variant] ?? 0.1 } : r));
    const md = renderMarkdown({ ...report, rows: withRedis }, 'latest.svg');
    expect(md).toContain(
      'in the Bull, BullMQ and Redis Stream scenarios: bull-local express blocking 31 µs, bull-local express deferred 12 µs, bull-local express deferred-offload 11 µs, ' +
        'bull-local express deferred-spool 13 µs.',
    );
    expect(renderMarkdown(report, 'latest.svg')).not.toContain('in the Bull, BullMQ and Redis Stream scenarios');
  });

  it('gives the client CPU per job, deferred − plain CPU µs/req in the local Bull and BullMQ scenarios, per adapter', () => {
    const rows = [...passingRows('express'), ...passingRows('fastify')].map((r) => {
      if (r.scenario === 'bull-local' && r.variant === 'deferred') return { ...r, cpuUsPerRequest: r.adapter === 'express' ? 267.4 : 210 };
      if (r.scenario === 'bullmq-local' && r.variant === 'deferred') return { ...r, cpuUsPerRequest: 215 };
      if (r.scenario === 'bullmq-local' && r.variant === 'plain') return { ...r, cpuUsPerRequest: 100 };
      // the proxy scenarios do not count
      if (r.scenario.endsWith('-proxy')) return { ...r, cpuUsPerRequest: 9999 };
      return r;
    });
    expect(clientCpuPerJob(rows)).toEqual([
      { adapter: 'express', bull: 147.39999999999998, bullmq: 115 },
      { adapter: 'fastify', bull: 90, bullmq: 115 },
    ]);
    expect(clientCpuPerJobLine(clientCpuPerJob(rows)[0])).toBe('client CPU per job: Bull 147 µs, BullMQ 115 µs');
    const text = renderClientCpuPerJobText(rows).split('\n');
    expect(text[0]).toMatch(/^Client CPU per job \(deferred CPU µs\/req − plain CPU µs\/req .*bull-local, bullmq-local, rabbitmq and nats.*\):$/);
    expect(text.slice(1)).toEqual(['  express  client CPU per job: Bull 147 µs, BullMQ 115 µs', '  fastify  client CPU per job: Bull 90 µs, BullMQ 115 µs']);
    const md = renderMarkdown({ ...report, rows }, 'latest.svg');
    expect(md).toContain('*Client CPU per job* (deferred CPU µs/req − plain CPU µs/req');
    expect(md).toContain('- express: client CPU per job: Bull 147 µs, BullMQ 115 µs\n- fastify: client CPU per job: Bull 90 µs, BullMQ 115 µs');
  });

  it('says n/a for a local queue scenario not run, and leaves the client CPU out when neither ran', () => {
    const onlyBull = passingRows().filter((r) => !r.scenario.startsWith('bullmq'));
    expect(clientCpuPerJobLine(clientCpuPerJob(onlyBull)[0])).toBe('client CPU per job: Bull 20 µs, BullMQ n/a');
    const neither = passingRows().filter((r) => r.scenario !== 'bull-local' && r.scenario !== 'bullmq-local');
    expect(clientCpuPerJob(neither)).toEqual([]);
    expect(renderClientCpuPerJobText(neither)).toBe('');
    expect(renderMarkdown({ ...report, rows: neither }, 'latest.svg')).not.toContain('Client CPU per job');
  });

  it('says when a worker\'s busy time exceeded the process CPU (a contended machine), without hiding the figure', () => {
    const contended = rows.map((r) =>
      r.scenario === 'bull-local' && r.variant === 'deferred-offload' ? { ...r, cpuUsPerRequest: 215, workerCpuUsPerRequest: 256, requestThreadCpuUsPerRequest: -41 } : r,
    );
    const md = renderMarkdown({ ...report, rows: contended }, 'latest.svg');
    expect(md).toContain('**Worker CPU overstated** in bull-local express deferred-offload');
    expect(md).toContain('| bull-local | express | deferred-offload | **7,000** | 10.0 | 9.0 | 20.0 | 215 | 256 | -41 |');
    expect(renderMarkdown(report, 'latest.svg')).not.toContain('Worker CPU overstated');
    // below the plain route's request thread, though positive: overstated as well
    const below = rows.map((r) =>
      r.scenario === 'bull-local' && r.variant === 'deferred-offload' ? { ...r, cpuUsPerRequest: 200, workerCpuUsPerRequest: 100, requestThreadCpuUsPerRequest: 100 } : r,
    );
    expect(renderMarkdown({ ...report, rows: below }, 'latest.svg')).toContain('**Worker CPU overstated** in bull-local express deferred-offload:');
  });

  it('adds the compression section only when it was run', () => {
    expect(renderMarkdown(report, 'latest.svg')).not.toContain('## Response-time insight');
    const compression: CompressionRow[] = [
      { adapter: 'express', encoding: 'br-11', connections: 10, requests: 30, reqPerSec: 14.5, latencyAvgMs: 600, latencyP99Ms: 800,
        cpuUsPerRequest: 85000, handlerMsAvg: 0.02, sendMsAvg: 550.5, responseBytes: 8731, itemsExpected: 60, itemsDelivered: 60, repeats: 2 },
      { adapter: 'express', encoding: 'identity', connections: 10, requests: 3000, reqPerSec: 900, latencyAvgMs: 10, latencyP99Ms: 30,
        cpuUsPerRequest: 1200, handlerMsAvg: 0.011, sendMsAvg: 0.9, responseBytes: 109590, itemsExpected: 6000, itemsDelivered: 6000, repeats: 2 },
    ];
    const md = renderMarkdown({ ...report, compression }, 'latest.svg');
    expect(md).toContain('## Response-time insight: compression');
    expect(md).toContain('| express | identity | 109,590 | 900 | 10.0 | 30 | 1,200 | 0.011 | 0.90 | 6000/6000 |');
    expect(md).toContain('| express | br-11 | 8,731 | 14.5 | 600 | 800 | 85,000 | 0.020 | 550.50 | 60/60 |');
    const text = renderCompressionTable(compression).split('\n');
    expect(text[2]).toMatch(/^express\s+identity/);
    expect(text[3]).toMatch(/^express\s+br-11\s+8,731\s+14\.5\s+600\s+800\s+85,000\s+0\.020\s+550\.50\s+60\/60$/);
    expect(JSON.parse(renderCompressionJson(compression)).map((r: CompressionRow) => r.encoding)).toEqual(['identity', 'br-11']);
  });

  it('prints the delivery checks as text and as a Markdown table, one line per scenario and adapter, naming a failed route', () => {
    const lost = [...passingRows('express'), ...passingRows('fastify')]
      .filter((r) => r.scenario === 'sim5' || r.scenario === 'http-log')
      .map((r) => (r.adapter === 'fastify' && r.scenario === 'http-log' && r.variant === 'deferred' ? { ...r, itemsDelivered: 197, itemsLost: 3 } : r));
    expect(renderDelivery(checkDelivery(lost)).split('\n')).toEqual([
      '| scenario | adapter | delivered/expected per route | result |',
      '| --- | --- | --- | --- |',
      '| sim5 | express | blocking 100/100; deferred 200/200 | ok |',
      '| sim5 | fastify | blocking 100/100; deferred 200/200 | ok |',
      '| http-log | express | blocking 100/100; deferred 200/200; deferred-offload 210/210; deferred-spool 190/190, all acked | ok |',
      '| http-log | fastify | blocking 100/100; deferred-offload 210/210; deferred-spool 190/190, all acked | **failed**: http-log/fastify/deferred: 197 of 200, 3 lost |',
    ]);
    expect(renderDeliveryText(checkDelivery(lost)).split('\n')).toEqual([
      '  ok    express  sim5: blocking 100/100; deferred 200/200',
      '  ok    fastify  sim5: blocking 100/100; deferred 200/200',
      '  ok    express  http-log: blocking 100/100; deferred 200/200; deferred-offload 210/210; deferred-spool 190/190, all acked',
      '  ok    fastify  http-log: blocking 100/100; deferred-offload 210/210; deferred-spool 190/190, all acked',
      'FAILED  fastify  http-log/fastify/deferred: 197 of 200, 3 lost',
    ]);
  });

  it('states figures, never thresholds: no target, "met" or "≥" in what the report prints or writes', () => {
    const everything = [...passingRows('express'), ...passingRows('fastify')];
    const slow = everything.map((r) => (r.variant === 'deferred' ? { ...r, reqPerSec: 100, cpuUsPerRequest: 900 } : r));
    for (const set of [everything, slow]) {
      const full = { ...report, rows: set, ratios: computeRatios(set), delivery: checkDelivery(set) };
      const printed = [renderMarkdown(full, 'latest.svg'), renderDeliveryText(full.delivery), renderTable(set), renderSpoolText(set)].join('\n');
      expect(printed).not.toMatch(/≥|≤|not met|\bmet\b|threshold|target/i);
    }
  });

  it('sums up each scenario in figures: deferred ÷ the other routes, p99 latencies and loop delay', () => {
    const figures = passingRows('fastify')
      .filter((r) => r.scenario === 'sim5' || r.scenario === 'bull-local')
      .map((r) => {
        if (r.scenario !== 'sim5') return r;
        if (r.variant === 'deferred') return { ...r, latencyP99Ms: 3.04, loopDelayP99Ms: 1.26 };
        if (r.variant === 'blocking') return { ...r, latencyP99Ms: 12.55 };
        return r;
      });
    expect(summaryLines(figures)).toEqual([
      'sim5 fastify: deferred ÷ plain 0.93×, ÷ blocking 4.38×, ÷ article-tap 2.00×, ÷ event-emitter 4.00×; ' +
        'p99 deferred 3.0 ms, blocking 12.6 ms, event-emitter 20.0 ms; loop delay p99 1.3 ms',
      'bull-local fastify: deferred ÷ plain 0.75×, ÷ blocking 1.20×, ÷ article-tap 2.00×, ÷ event-emitter 4.00×; ' +
        'p99 deferred 20.0 ms, blocking 20.0 ms, event-emitter 20.0 ms',
    ]);
    const md = renderMarkdown({ ...report, rows: figures }, 'latest.svg');
    expect(md).toContain('## Summary\n');
    expect(md).toContain('\n- sim5 fastify: deferred ÷ plain 0.93×');
    // a scenario without a deferred route has no line
    expect(summaryLines(figures.filter((r) => r.variant !== 'deferred'))).toEqual([]);
  });

  it('re-renders the delivery section of a saved report from its rows, keeping the rest', () => {
    const old = ['# report', '', 'table', '', '## Checks', '', '| express | x ≥ 2× | 1.0× | **not met** |', '', '## Variants', '', '- plain', ''].join('\n');
    const md = replaceDeliverySection(old, rows);
    expect(md.startsWith('# report\n\ntable\n\n## Delivery\n')).toBe(true);
    expect(md).toContain('| sim5 | express | blocking 100/100; deferred 200/200 | ok |');
    expect(md).toContain('\n\n## Variants\n\n- plain\n');
    expect(md).not.toMatch(/≥|not met|## Checks/);
    // once re-rendered, re-rendering again changes nothing; a report without the section is left as it is
    expect(replaceDeliverySection(md, rows)).toBe(md);
    expect(replaceDeliverySection('# report\n', rows)).toBe('# report\n');
  });

  it('draws an SVG with two bars per row and escaped labels', () => {
    const svg = renderSvg([...rows, row('mix', 'fastify', 'deferred', { scenarioLabel: 'a <b> & "c"', reqPerSec: Number.NaN })], {
      title: 'T & T',
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    const bars = svg.match(/<rect x="\d+(\.\d+)?" y="\d+(\.\d+)?" width="[\d.]+" height="11"/g) ?? [];
    expect(bars).toHaveLength((rows.length + 1) * 2);
    expect(svg).toContain('a &lt;b&gt; &amp; &quot;c&quot; · fastify');
    expect(svg).toContain('T &amp; T');
    expect(svg).not.toMatch(/NaN|undefined/);
  });

  it('rounds axis maxima up to 1, 2, 2.5 or 5 times a power of ten', () => {
    expect(niceMax(7300)).toBe(10000);
    expect(niceMax(1800)).toBe(2000);
    expect(niceMax(240)).toBe(250);
    expect(niceMax(0)).toBe(1);
    expect(escapeXml(`<&>"'`)).toBe('&lt;&amp;&gt;&quot;&apos;');
  });
});
