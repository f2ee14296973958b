import {
  aggregateRuns,
  clientCpuPerJob,
  clientCpuPerJobLine,
  renderClientCpuPerJobText,
  renderCompressionJson,
  renderCompressionTable,
  checkTargets,
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
  renderTargets,
  renderTargetsText,
  spoolSummary,
} from '../src/bench/report';
import { escapeXml, niceMax, renderSvg } from '../src/bench/svg';
import type { Adapter, BenchReport, CompressionRow, ResultRow, RunSample, ScenarioId, SpoolFigures, TargetCheck, Variant } from '../src/bench/types';

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

/** Checks with a threshold (not the figures reported without one). */
const gated = (checks: ReturnType<typeof checkTargets>) => checks.filter((c) => !c.reportOnly);

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

  it('checks deferred-spool ÷ plain ≥ 0.80× in bull-local, per adapter, and leaves it unevaluated when not run', () => {
    const target = 'bull-local, disk spool vs no side effect: deferred-spool/plain req/s ≥ 0.80×';
    expect(checkTargets(passingRows()).find((c) => c.target === target)).toMatchObject({ measured: '0.85×', pass: true });
    const slow = passingRows().map((r) => (r.scenario === 'bull-local' && r.variant === 'deferred-spool' ? { ...r, reqPerSec: 6000 } : r));
    expect(checkTargets(slow).find((c) => c.target === target)).toMatchObject({ measured: '0.75×', pass: false });
    const none = passingRows().filter((r) => r.variant !== 'deferred-spool');
    expect(checkTargets(none).find((c) => c.target === target)).toMatchObject({ measured: 'n/a', pass: undefined });
    // the deferred ÷ plain checks never pick the spooled route, even when it is the fastest
    const fast = passingRows().map((r) => (r.scenario === 'mix' && r.variant === 'deferred-spool' ? { ...r, reqPerSec: 7400 } : r));
    expect(checkTargets(fast).find((c) => c.target.startsWith('mix, deferred vs no side effect'))).toMatchObject({ measured: '0.95×' });
  });

  it('counts the deferred-spool deliveries in "delivered = expected", every spooled item acked and none left pending', () => {
    const delivered = (rows: ResultRow[]) => checkTargets(rows).find((c) => c.target.startsWith('delivered'))!;
    expect(delivered(passingRows())).toMatchObject({ pass: true });
    const pending = passingRows().map((r) =>
      r.scenario === 'http-log' && r.variant === 'deferred-spool' ? { ...r, spool: spoolFigures(190, { acked: 188, pending: 2 }) } : r,
    );
    expect(delivered(pending)).toMatchObject({ pass: false, measured: 'http-log/deferred-spool: 190 of 190, spool: 190 appended, 188 acked, 2 pending' });
    expect(renderTable(pending)).toContain('190/190 (spool: 188 of 190 acked, 2 pending!)');
    const refused = passingRows().map((r) =>
      r.scenario === 'mix' && r.variant === 'deferred-spool'
        ? { ...r, itemsDelivered: 940, itemsLost: 10, spool: spoolFigures(940, { refused: 10 }) }
        : r,
    );
    expect(delivered(refused).measured).toBe('mix/deferred-spool: 940 of 950, 10 lost, spool: 940 appended, 940 acked, 0 pending, 10 refused, 0 failed, 0 sync errors');
  });
});

describe('checkTargets', () => {
  it('marks every check met for a passing result set', () => {
    const checks = checkTargets(passingRows());
    expect(checks).toHaveLength(35);
    expect(gated(checks)).toHaveLength(21);
    expect(gated(checks).every((c) => c.pass === true)).toBe(true);
    expect(checks.find((c) => c.target.startsWith('sim25 vs sim5: deferred req/s within 10%'))?.measured).toBe('-2.9%');
  });

  it('reports misses with the measured value', () => {
    const rows = passingRows().map((r) => {
      if (r.scenario === 'sim5' && r.variant === 'blocking') return { ...r, reqPerSec: 2500 };
      if (r.scenario === 'mix' && r.variant === 'deferred') return { ...r, cpuUsPerRequest: 160 };
      if (r.scenario === 'http-log' && r.variant === 'deferred') return { ...r, itemsDelivered: 199 };
      return r;
    });
    const checks = checkTargets(rows);
    const byTarget = (prefix: string) => checks.find((c) => c.target.startsWith(prefix))!;
    expect(byTarget('sim5, deferred vs awaiting a 5 ms call')).toMatchObject({ pass: false, measured: '2.80×' });
    expect(byTarget("mix, the library's CPU vs a no-op interceptor")).toMatchObject({ pass: false, measured: '1.23×' });
    expect(byTarget('delivered')).toMatchObject({ pass: false, measured: 'http-log/deferred: 199 of 200' });
  });

  it('counts items the library lost as a miss even when the totals match', () => {
    const rows = passingRows().map((r) => (r.scenario === 'mix' && r.variant === 'deferred' ? { ...r, itemsLost: 3 } : r));
    expect(checkTargets(rows).find((c) => c.target.startsWith('delivered'))?.pass).toBe(false);
  });

  it('counts a destination that disagrees with stats() as a miss', () => {
    const rows = passingRows().map((r) =>
      r.scenario === 'bull-local' && r.variant === 'deferred' ? { ...r, itemsAtDestination: 198 } : r,
    );
    const check = checkTargets(rows).find((c) => c.target.startsWith('delivered'))!;
    expect(check).toMatchObject({ pass: false, measured: 'bull-local/deferred: 200 of 200, 198 at the destination' });
    expect(renderTable(rows)).toContain('200/200 (198 at destination!)');
  });

  it('leaves skipped scenarios unevaluated and says why', () => {
    const rows = passingRows().filter((r) => !r.scenario.startsWith('bull'));
    const checks = checkTargets(rows, [{ scenario: 'bull-local', scenarioLabel: 'x', reason: 'no Redis: not found' }]);
    const local = checks.find((c) => c.target.startsWith('bull-local, Bull batching vs await queue.add'))!;
    expect(local).toMatchObject({ pass: undefined, measured: 'skipped: no Redis: not found' });
    expect(checks.find((c) => c.target.startsWith('bull-proxy, Bull batching vs await queue.add'))).toMatchObject({ pass: undefined, measured: 'not run' });
  });

  it('evaluates each adapter separately', () => {
    const checks = checkTargets([...passingRows('express'), ...passingRows('fastify')]);
    expect(checks.filter((c) => c.adapter === 'fastify')).toHaveLength(35);
    expect(gated(checks).filter((c) => c.adapter === 'fastify')).toHaveLength(21);
  });

  it('reports the SQL ratios deferred ÷ blocking and deferred ÷ event-emitter without a threshold, and counts their deliveries', () => {
    const pg = passingRows()
      .filter((r) => r.scenario === 'bullmq-local' && r.variant !== 'deferred-offload')
      .map((r) => ({ ...r, scenario: 'pg-local' as const, scenarioLabel: 'PostgreSQL row', itemsAtDestination: r.itemsDelivered }));
    const checks = checkTargets([...passingRows(), ...pg], [{ scenario: 'mysql-local', scenarioLabel: 'MySQL row', reason: 'no database' }]);
    const sql = checks.filter((c) => c.target.startsWith('pg-local') || c.target.startsWith('mysql-local'));
    expect(sql.map((c) => [c.target, c.measured, c.pass, c.reportOnly])).toEqual([
      ['pg-local, batched rows vs await INSERT: deferred/blocking req/s', '1.23×', undefined, true],
      ['pg-local, batched rows vs an async @OnEvent listener awaiting INSERT: deferred/event-emitter req/s', '4.00×', undefined, true],
      ['mysql-local, batched rows vs await INSERT: deferred/blocking req/s', 'skipped: no database', undefined, true],
      ['mysql-local, batched rows vs an async @OnEvent listener awaiting INSERT: deferred/event-emitter req/s', 'skipped: no database', undefined, true],
    ]);
    expect(checks.find((c) => c.target === 'delivered = expected, every scenario')?.pass).toBe(true);
    // a row missing from the table fails the delivery check
    const lost = pg.map((r) => (r.variant === 'deferred' ? { ...r, itemsAtDestination: r.itemsDelivered - 1 } : r));
    const failed = checkTargets([...passingRows(), ...lost]).find((c) => c.target === 'delivered = expected, every scenario')!;
    expect(failed.pass).toBe(false);
    expect(failed.measured).toMatch(/^pg-local\/deferred: (\d+) of \1, \d+ at the destination$/);
  });

  it('reports the BullMQ ratios deferred ÷ blocking and deferred ÷ plain without a threshold, per adapter', () => {
    const checks = checkTargets([...passingRows('express'), ...passingRows('fastify')]);
    const reported = checks.filter((c) => c.reportOnly && c.target.includes('BullMQ'));
    expect(reported.map((c) => [c.adapter, c.target, c.measured, c.pass])).toEqual([
      ['express', 'bullmq-local, BullMQ batching vs await queue.add: deferred/blocking req/s', '1.23×', undefined],
      ['express', 'bullmq-local, deferred BullMQ job vs no side effect: deferred/plain req/s', '0.80×', undefined],
      ['express', 'bullmq-proxy, BullMQ batching vs await queue.add, Redis at 30 ms RTT: deferred/blocking req/s', '20.00×', undefined],
      ['express', 'bullmq-proxy, deferred BullMQ job vs no side effect, Redis at 30 ms RTT: deferred/plain req/s', '0.78×', undefined],
      ['fastify', 'bullmq-local, BullMQ batching vs await queue.add: deferred/blocking req/s', '1.23×', undefined],
      ['fastify', 'bullmq-local, deferred BullMQ job vs no side effect: deferred/plain req/s', '0.80×', undefined],
      ['fastify', 'bullmq-proxy, BullMQ batching vs await queue.add, Redis at 30 ms RTT: deferred/blocking req/s', '20.00×', undefined],
      ['fastify', 'bullmq-proxy, deferred BullMQ job vs no side effect, Redis at 30 ms RTT: deferred/plain req/s', '0.78×', undefined],
    ]);
    expect(renderTargets(reported.slice(0, 1))).toContain('| express | bullmq-local, BullMQ batching vs await queue.add: deferred/blocking req/s | 1.23× | reported |');
    expect(renderTargetsText(reported.slice(0, 1))).toBe(' info    express  bullmq-local, BullMQ batching vs await queue.add: deferred/blocking req/s: 1.23×');
  });

  it('counts the BullMQ deliveries in "delivered = expected" and says when BullMQ was skipped', () => {
    const rows = passingRows().map((r) =>
      r.scenario === 'bullmq-proxy' && r.variant === 'deferred' ? { ...r, itemsAtDestination: 190 } : r,
    );
    expect(checkTargets(rows).find((c) => c.target.startsWith('delivered'))).toMatchObject({
      pass: false,
      measured: 'bullmq-proxy/deferred: 200 of 200, 190 at the destination',
    });
    const withoutBullMq = passingRows().filter((r) => !r.scenario.startsWith('bullmq'));
    const checks = checkTargets(withoutBullMq, [{ scenario: 'bullmq-local', scenarioLabel: 'x', reason: 'sink not available' }]);
    const skippedLocal = checks.find((c) => c.target === 'bullmq-local, deferred BullMQ job vs no side effect: deferred/plain req/s')!;
    expect(skippedLocal).toMatchObject({ measured: 'skipped: sink not available', reportOnly: true });
    expect(skippedLocal.pass).toBeUndefined();
    expect(checks.find((c) => c.target === 'bullmq-proxy, BullMQ batching vs await queue.add, Redis at 30 ms RTT: deferred/blocking req/s')?.measured).toBe('not run');
    // the BullMQ deferred ÷ plain checks are left unevaluated too; everything evaluated is met
    expect(checks.find((c) => c.target.startsWith('bullmq-local, deferred vs no side effect'))).toMatchObject({ pass: undefined, measured: 'skipped: sink not available' });
    expect(gated(checks).filter((c) => c.pass !== undefined)).toHaveLength(19);
    expect(gated(checks).filter((c) => c.pass !== undefined).every((c) => c.pass === true)).toBe(true);
  });

  it('checks the slow tail: deferred ÷ plain ≥ 0.85× and every deferred callback delivered', () => {
    const met = checkTargets(passingRows());
    expect(met.find((c) => c.target.startsWith('sim5-tail, slow tail (1 call in 1000'))).toMatchObject({ pass: true, measured: '0.88×' });
    expect(met.find((c) => c.target.startsWith('sim5-tail, slow tail: delivered'))).toMatchObject({ pass: true, measured: '200 of 200' });
    const rows = passingRows().map((r) =>
      r.scenario === 'sim5-tail' && r.variant === 'deferred' ? { ...r, reqPerSec: 6000, itemsDelivered: 120, itemsLost: 80 } : r,
    );
    const checks = checkTargets(rows);
    expect(checks.find((c) => c.target.startsWith('sim5-tail, slow tail (1 call in 1000'))).toMatchObject({ pass: false, measured: '0.75×' });
    expect(checks.find((c) => c.target.startsWith('sim5-tail, slow tail: delivered'))).toMatchObject({ pass: false, measured: '120 of 200, 80 lost' });
    expect(checks.find((c) => c.target.startsWith('delivered'))).toMatchObject({ pass: false, measured: 'sim5-tail/deferred: 120 of 200, 80 lost' });
    const notRun = checkTargets(passingRows().filter((r) => r.scenario !== 'sim5-tail'));
    expect(notRun.find((c) => c.target.startsWith('sim5-tail, slow tail: delivered'))).toMatchObject({ pass: undefined, measured: 'not run' });
  });

  it('checks deferred ÷ plain and ÷ the peers with the better deferred route, naming it', () => {
    const checks = checkTargets(passingRows());
    const byTarget = (prefix: string) => checks.find((c) => c.target.startsWith(prefix))!;
    expect(byTarget('sim5, deferred vs no side effect')).toMatchObject({ target: 'sim5, deferred vs no side effect: deferred/plain req/s ≥ 0.90×', measured: '0.93×', pass: true });
    expect(byTarget('bull-local, deferred vs no side effect')).toMatchObject({
      target: 'bull-local, deferred vs no side effect: deferred/plain req/s ≥ 0.85× (better of deferred, deferred-offload)',
      measured: '0.88× (deferred-offload)',
      pass: true,
    });
    expect(byTarget('http-log, deferred vs no side effect')).toMatchObject({ measured: '0.91× (deferred-offload)', pass: true });
    // request thread: deferred-offload 200 − 75 = 125 µs, deferred 140 µs; plain 120 µs
    expect(byTarget('bull-local, request-thread CPU per Bull job')).toMatchObject({ measured: '5.0 µs (deferred-offload); deferred 20.0 µs', pass: true });
    expect(byTarget("deferred vs the article's tap interceptor")).toMatchObject({
      target: "deferred vs the article's tap interceptor: deferred/article-tap req/s ≥ 1.15×, every scenario (lowest; better deferred route each)",
      measured: '2.00× (sim5, deferred)',
      pass: true,
    });
    expect(byTarget('deferred vs @nestjs/event-emitter')).toMatchObject({ measured: '4.00× (sim5, deferred)', pass: true });
    // Fastify's article-tap threshold is 1.5×
    const fastify = checkTargets(passingRows('fastify')).find((c) => c.target.startsWith("deferred vs the article's tap interceptor"))!;
    expect(fastify.target).toContain('≥ 1.50×');
  });

  it('reports what the peer thresholds ask of deferred ÷ plain, and says when that is more than plain', () => {
    const asks = (checks: TargetCheck[], label: string) => checks.find((c) => c.target.startsWith(`what deferred/${label}`))!;
    const met = checkTargets(passingRows('fastify'));
    expect(asks(met, 'article-tap')).toMatchObject({ reportOnly: true });
    expect(asks(met, 'article-tap').pass).toBeUndefined();
    expect(asks(met, 'article-tap').target).toBe('what deferred/article-tap ≥ 1.50× asks of deferred/plain req/s (article-tap/plain × 1.50; highest)');
    expect(asks(met, 'article-tap').measured).not.toContain('more than');
    // Fastify, sim5: the hand-written interceptor at 0.72× plain; 1.5× of it is 1.08× plain
    const rows = passingRows('fastify').map((r) => (r.scenario === 'sim5' && r.variant === 'article-tap' ? { ...r, reqPerSec: 7500 * 0.72 } : r));
    expect(asks(checkTargets(rows), 'article-tap').measured).toBe('1.08× (sim5) — more than the route with no side effect');
    const emitter = passingRows('fastify').map((r) => (r.scenario === 'sim25' && r.variant === 'event-emitter' ? { ...r, reqPerSec: 7500 * 0.8 } : r));
    expect(asks(checkTargets(emitter), 'event-emitter').measured).toBe('0.84× (sim25)');
  });

  it('reports the deferred ÷ plain and ÷ peer checks not met with the measured value', () => {
    const rows = passingRows().map((r) => {
      if (r.scenario === 'mix' && r.variant === 'deferred') return { ...r, reqPerSec: 6000 };
      // the offloaded route slower than the in-process one: the in-process one is the better
      if (r.scenario === 'bull-proxy' && r.variant === 'deferred-offload') return { ...r, reqPerSec: 5000 };
      if (r.scenario === 'bull-proxy' && r.variant === 'deferred') return { ...r, reqPerSec: 6400 };
      // the worker takes less off the request thread than needed
      if (r.scenario === 'bull-local' && r.variant === 'deferred-offload') return { ...r, workerCpuUsPerRequest: 50, requestThreadCpuUsPerRequest: 150 };
      if (r.scenario === 'sim5-tail' && r.variant === 'article-tap') return { ...r, reqPerSec: 6500 };
      if (r.scenario === 'http-log' && r.variant === 'event-emitter') return { ...r, reqPerSec: 7100 };
      return r;
    });
    const checks = checkTargets(rows);
    const byTarget = (prefix: string) => checks.find((c) => c.target.startsWith(prefix))!;
    expect(byTarget('mix, deferred vs no side effect')).toMatchObject({ measured: '0.80×', pass: false });
    expect(byTarget('bull-proxy, deferred vs no side effect')).toMatchObject({ measured: '0.80× (deferred)', pass: false });
    expect(byTarget('bull-local, request-thread CPU per Bull job')).toMatchObject({ measured: '20.0 µs (deferred); deferred-offload 30.0 µs', pass: false });
    expect(byTarget("deferred vs the article's tap interceptor")).toMatchObject({ measured: '1.08× (sim5-tail, deferred)', pass: false });
    expect(byTarget('deferred vs @nestjs/event-emitter')).toMatchObject({ measured: '1.03× (http-log, deferred-offload)', pass: false });
  });

  it('counts the deferred-offload deliveries in "delivered = expected"', () => {
    const rows = passingRows().map((r) =>
      r.scenario === 'http-log' && r.variant === 'deferred-offload' ? { ...r, itemsDelivered: 205, itemsLost: 5 } : r,
    );
    expect(checkTargets(rows).find((c) => c.target.startsWith('delivered'))).toMatchObject({
      pass: false,
      measured: 'http-log/deferred-offload: 205 of 210, 5 lost',
    });
  });

  it('leaves the checks of a scenario not run unevaluated', () => {
    const checks = checkTargets(passingRows().filter((r) => r.scenario !== 'bull-local'), [
      { scenario: 'bull-local', scenarioLabel: 'x', reason: 'no Redis: not found' },
    ]);
    expect(checks.find((c) => c.target.startsWith('bull-local, request-thread CPU per Bull job'))).toMatchObject({
      pass: undefined,
      measured: 'skipped: no Redis: not found',
    });
    expect(checks.find((c) => c.target.startsWith('bull-local, deferred vs no side effect'))?.pass).toBeUndefined();
  });

  it('shows what a peer lost in its row without counting it against the library', () => {
    const rows = passingRows().map((r) =>
      r.scenario === 'http-log' && r.variant === 'article-tap' ? { ...r, itemsDelivered: 140, unhandledRejections: 10 } : r,
    );
    expect(checkTargets(rows).find((c) => c.target.startsWith('delivered'))?.pass).toBe(true);
    const line = renderTable(rows)
      .split('\n')
      .find((l) => l.startsWith('http-log') && l.includes('article-tap'))!;
    expect(line).toContain('140/150 (10 unhandled rejections!)');
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
    targets: checkTargets(rows),
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
    expect(md).toContain('| express | bull-local, disk spool vs no side effect: deferred-spool/plain req/s ≥ 0.80× | 0.85× | met |');
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

  it('writes Markdown with the chart, the table, the checks and what was skipped', () => {
    const md = renderMarkdown(report, 'latest.svg');
    expect(md).toContain('![req/s and CPU per request by scenario and variant](latest.svg)');
    expect(md).toContain(renderMarkdownTable(rows));
    expect(md).toContain('| sim25 | express | deferred | **6,800** |');
    expect(md).toContain('## Checks\n');
    expect(md).toContain('| bull-local | express | deferred-offload | **7,000** | 10.0 | 9.0 | 20.0 | 200 | 75 | 125 | 210/210 |  | 0.88× | 2.33× | 4.67× | 1.17× |');
    expect(md).toContain('- `deferred-offload` (Bull, BullMQ and HTTP-log scenarios)');
    expect(md).toContain('| express | bull-local, request-thread CPU per Bull job (best deferred route − plain) ≤ 10 µs | 5.0 µs (deferred-offload); deferred 20.0 µs | met |');
    expect(md).toContain('| express | bullmq-proxy, BullMQ batching vs await queue.add, Redis at 30 ms RTT: deferred/blocking req/s | 20.00× | reported |');
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
    expect(checkTargets(contended).find((c) => c.target.startsWith('bull-local, request-thread CPU per Bull job'))).toMatchObject({
      pass: undefined,
      measured: '-161.0 µs (deferred-offload); deferred 20.0 µs — worker CPU overstated (contended machine), not evaluated',
    });
    // below the plain route's request thread, though positive: overstated as well
    const below = rows.map((r) =>
      r.scenario === 'bull-local' && r.variant === 'deferred-offload' ? { ...r, cpuUsPerRequest: 200, workerCpuUsPerRequest: 100, requestThreadCpuUsPerRequest: 100 } : r,
    );
    expect(renderMarkdown({ ...report, rows: below }, 'latest.svg')).toContain('**Worker CPU overstated** in bull-local express deferred-offload:');
    expect(checkTargets(below).find((c) => c.target.startsWith('bull-local, request-thread CPU per Bull job'))?.pass).toBeUndefined();
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

  it('prints the checks as text and as a Markdown table, marking those not met', () => {
    const checks: TargetCheck[] = [
      { adapter: 'express', target: 't1', measured: '2.0×', pass: false },
      { adapter: 'express', target: 't2', measured: '3.0×', pass: true },
      { adapter: 'express', target: 't3', measured: 'not run' },
    ];
    expect(renderTargets(checks).split('\n')).toEqual([
      '| adapter | check | measured | result |',
      '| --- | --- | ---: | --- |',
      '| express | t1 | 2.0× | **not met** |',
      '| express | t2 | 3.0× | met |',
      '| express | t3 | not run | – |',
    ]);
    const text = renderTargetsText(checks);
    expect(text.split('\n')).toEqual([
      'NOT MET  express  t1: 2.0×',
      '  ok     express  t2: 3.0×',
      '  -      express  t3: not run',
    ]);
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
