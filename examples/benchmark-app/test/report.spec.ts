import {
  aggregateRuns,
  clientCpuPerJob,
  clientCpuPerJobLine,
  renderClientCpuPerJobText,
  renderCompressionJson,
  renderCompressionTable,
  checkTargets,
  computeRatios,
  median,
  ratio,
  renderJson,
  renderMarkdown,
  renderMarkdownTable,
  renderTable,
  renderTargets,
  renderTargetsText,
} from '../src/bench/report';
import { escapeXml, niceMax, renderSvg } from '../src/bench/svg';
import type { Adapter, BenchReport, CompressionRow, ResultRow, RunSample, ScenarioId, Variant } from '../src/bench/types';

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
    ...overrides,
  };
}

/** A full, fixed result set for one adapter: every target met. */
function passingRows(adapter: Adapter = 'express'): ResultRow[] {
  const scenario = (id: ScenarioId, blocking: number, deferred: number, items = 1): ResultRow[] => [
    row(id, adapter, 'plain', { reqPerSec: 8000, cpuUsPerRequest: 120 }),
    row(id, adapter, 'noop-interceptor', { reqPerSec: 7600, cpuUsPerRequest: 130 }),
    row(id, adapter, 'blocking', { reqPerSec: blocking, cpuUsPerRequest: 150, itemsExpected: 100 * items, itemsDelivered: 100 * items }),
    row(id, adapter, 'deferred', { reqPerSec: deferred, cpuUsPerRequest: 140, itemsExpected: 200 * items, itemsDelivered: 200 * items }),
    row(id, adapter, 'article-tap', { reqPerSec: deferred / 2, cpuUsPerRequest: 160, itemsExpected: 150 * items, itemsDelivered: 150 * items }),
    row(id, adapter, 'event-emitter', { reqPerSec: deferred / 4, cpuUsPerRequest: 170, itemsExpected: 120 * items, itemsDelivered: 120 * items }),
  ];
  return [
    ...scenario('sim5', 1600, 7000),
    ...scenario('sim25', 380, 6800),
    ...scenario('bull-local', 5000, 6000),
    ...scenario('bull-proxy', 300, 6500),
    ...scenario('http-log', 3000, 6900),
    ...scenario('mix', 7000, 7100, 5),
    ...scenario('sim5-tail', 1500, 7000),
    ...scenario('bullmq-local', 5200, 6400),
    ...scenario('bullmq-proxy', 310, 6200),
  ];
}

/** Targets with a threshold (not the figures reported without one). */
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

describe('checkTargets', () => {
  it('marks every target met for a passing result set', () => {
    const checks = checkTargets(passingRows());
    expect(checks).toHaveLength(13);
    expect(gated(checks)).toHaveLength(9);
    expect(gated(checks).every((c) => c.pass === true)).toBe(true);
    expect(checks.find((c) => c.target.startsWith('25 ms deferred'))?.measured).toBe('-2.9%');
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
    expect(byTarget('5 ms')).toMatchObject({ pass: false, measured: '2.80×' });
    expect(byTarget('mix')).toMatchObject({ pass: false, measured: '1.23×' });
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
    const local = checks.find((c) => c.target.startsWith('local Redis'))!;
    expect(local).toMatchObject({ pass: undefined, measured: 'skipped: no Redis: not found' });
    expect(checks.find((c) => c.target.startsWith('Redis at'))).toMatchObject({ pass: undefined, measured: 'not run' });
  });

  it('evaluates each adapter separately', () => {
    const checks = checkTargets([...passingRows('express'), ...passingRows('fastify')]);
    expect(checks.filter((c) => c.adapter === 'fastify')).toHaveLength(13);
    expect(gated(checks).filter((c) => c.adapter === 'fastify')).toHaveLength(9);
  });

  it('reports the BullMQ ratios deferred ÷ blocking and deferred ÷ plain without a threshold, per adapter', () => {
    const checks = checkTargets([...passingRows('express'), ...passingRows('fastify')]);
    const reported = checks.filter((c) => c.reportOnly);
    expect(reported.map((c) => [c.adapter, c.target, c.measured, c.pass])).toEqual([
      ['express', 'BullMQ, local Redis: deferred/blocking req/s', '1.23×', undefined],
      ['express', 'BullMQ, local Redis: deferred/plain req/s', '0.80×', undefined],
      ['express', 'BullMQ, Redis at 30 ms RTT: deferred/blocking req/s', '20.00×', undefined],
      ['express', 'BullMQ, Redis at 30 ms RTT: deferred/plain req/s', '0.78×', undefined],
      ['fastify', 'BullMQ, local Redis: deferred/blocking req/s', '1.23×', undefined],
      ['fastify', 'BullMQ, local Redis: deferred/plain req/s', '0.80×', undefined],
      ['fastify', 'BullMQ, Redis at 30 ms RTT: deferred/blocking req/s', '20.00×', undefined],
      ['fastify', 'BullMQ, Redis at 30 ms RTT: deferred/plain req/s', '0.78×', undefined],
    ]);
    expect(renderTargets(reported.slice(0, 1))).toContain('| express | BullMQ, local Redis: deferred/blocking req/s | 1.23× | reported |');
    expect(renderTargetsText(reported.slice(0, 1))).toBe(' info   express  BullMQ, local Redis: deferred/blocking req/s: 1.23×');
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
    const skippedLocal = checks.find((c) => c.target === 'BullMQ, local Redis: deferred/plain req/s')!;
    expect(skippedLocal).toMatchObject({ measured: 'skipped: sink not available', reportOnly: true });
    expect(skippedLocal.pass).toBeUndefined();
    expect(checks.find((c) => c.target === 'BullMQ, Redis at 30 ms RTT: deferred/blocking req/s')?.measured).toBe('not run');
    expect(gated(checks).every((c) => c.pass === true)).toBe(true);
  });

  it('checks the slow tail: deferred ÷ plain ≥ 0.85× and every deferred callback delivered', () => {
    const met = checkTargets(passingRows());
    expect(met.find((c) => c.target.startsWith('slow tail (1 call in 1000'))).toMatchObject({ pass: true, measured: '0.88×' });
    expect(met.find((c) => c.target.startsWith('slow tail: delivered'))).toMatchObject({ pass: true, measured: '200 of 200' });
    const rows = passingRows().map((r) =>
      r.scenario === 'sim5-tail' && r.variant === 'deferred' ? { ...r, reqPerSec: 6000, itemsDelivered: 120, itemsLost: 80 } : r,
    );
    const checks = checkTargets(rows);
    expect(checks.find((c) => c.target.startsWith('slow tail (1 call in 1000'))).toMatchObject({ pass: false, measured: '0.75×' });
    expect(checks.find((c) => c.target.startsWith('slow tail: delivered'))).toMatchObject({ pass: false, measured: '120 of 200, 80 lost' });
    expect(checks.find((c) => c.target.startsWith('delivered'))).toMatchObject({ pass: false, measured: 'sim5-tail/deferred: 120 of 200, 80 lost' });
    const notRun = checkTargets(passingRows().filter((r) => r.scenario !== 'sim5-tail'));
    expect(notRun.find((c) => c.target.startsWith('slow tail: delivered'))).toMatchObject({ pass: undefined, measured: 'not run' });
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
    expect(sim25Deferred).toMatch(/17\.89×\s+0\.85×\s+2\.00×\s+4\.00×$/);
    expect(table[0]).toMatch(/÷ blocking\s+÷ plain\s+÷ article-tap\s+÷ event-emitter$/);
    expect(sim25Deferred).toContain('200/200');
    const sim25Blocking = table.find((l) => l.startsWith('sim25') && l.includes('blocking'))!;
    expect(sim25Blocking).not.toContain('×');
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
    expect(parsed.map((r) => r.variant).slice(0, 6)).toEqual(['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter']);
  });

  it('writes Markdown with the chart, the table, the targets and what was skipped', () => {
    const md = renderMarkdown(report, 'latest.svg');
    expect(md).toContain('![req/s and CPU per request by scenario and variant](latest.svg)');
    expect(md).toContain(renderMarkdownTable(rows));
    expect(md).toContain('| sim25 | express | deferred | **6,800** |');
    expect(md).toContain('## Targets (issues 4, 9 and 11)');
    expect(md).toContain('| express | BullMQ, Redis at 30 ms RTT: deferred/blocking req/s | 20.00× | reported |');
    expect(md).toContain('| sim5-tail | express | article-tap | 3,500 |');
    expect(md).toContain('- `event-emitter`: the handler emits');
    expect(md).toContain('**bull-proxy** (Bull <proxy>): no Redis');
    expect(md).toContain('2 × Test CPU');
  });

  it('lists the Redis CPU per request of the blocking and deferred Bull rows', () => {
    const withRedis = rows.map((r) =>
      r.scenario === 'bull-local' ? { ...r, redisCpuUsPerRequest: r.variant === 'blocking' ? 31.4 : r.variant === 'deferred' ? 12.2 : 0.1 } : r,
    );
    const md = renderMarkdown({ ...report, rows: withRedis }, 'latest.svg');
    expect(md).toContain('in the Bull and BullMQ scenarios: bull-local express blocking 31 µs, bull-local express deferred 12 µs.');
    expect(renderMarkdown(report, 'latest.svg')).not.toContain('in the Bull and BullMQ scenarios');
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
    expect(text[0]).toMatch(/^Client CPU per job \(deferred CPU µs\/req − plain CPU µs\/req .*bull-local and bullmq-local.*\):$/);
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

  it('prints the targets as text, marking misses', () => {
    const text = renderTargetsText([
      { adapter: 'express', target: 't1', measured: '2.0×', pass: false },
      { adapter: 'express', target: 't2', measured: '3.0×', pass: true },
      { adapter: 'express', target: 't3', measured: 'not run' },
    ]);
    expect(text.split('\n')).toEqual([
      'MISSED  express  t1: 2.0×',
      '  ok    express  t2: 3.0×',
      '  -     express  t3: not run',
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
