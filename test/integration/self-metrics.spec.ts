import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BullModule, getQueueToken } from '@nestjs/bull';
import { Controller, Get, Header, Param } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { Queue } from 'bull';
import { Registry } from 'prom-client';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { BullSink } from 'nestjs-deferred-work/bull';
import { DeferredWorkMetricsModule } from 'nestjs-deferred-work/metrics';
import { load, range } from '../support/load';
import { renderOutageChart } from '../support/outage-chart';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';
import { PrometheusServer, type PromRange } from '../support/prometheus-server';
import { RedisServer } from '../support/redis-server';

/**
 * The library's own metrics through a real outage: an app deferring Bull jobs to a private
 * redis-server, scraped by a private Prometheus every 250 ms (and read by an OpenTelemetry in-memory
 * reader every 250 ms) during 2,000 requests, with Redis stopped for 3 s mid-load. Then every panel of
 * the Grafana dashboard in docs/ is run against that Prometheus.
 *
 * With DEFERRED_WORK_OUTAGE_CHART=<path.svg>, the Express run also draws its chart there (the one in
 * docs/operations.md).
 */

const REQUESTS = 2000;
const OUTAGE_MS = 3000;
const RUN = `dw-metrics-${process.pid}-${Date.now().toString(36)}`;
const root = join(import.meta.dirname, '..', '..');
const dashboard = JSON.parse(readFileSync(join(root, 'docs/grafana/deferred-work-dashboard.json'), 'utf8')) as {
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
};

let registry = new Registry();

@Controller()
class OrdersController {
  @Get('order/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'confirm', { id });
    work.run(() => undefined);
    return { id };
  }
}

@Controller()
class MetricsController {
  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics() {
    return registry.metrics();
  }
}

const redis = new RedisServer({ persistent: true });
beforeAll(() => redis.start());
afterAll(() => redis.dispose());
failOnUnhandledRejection();

/** The points of the one series a range query returned. */
function only(series: PromRange[], what: string): Array<[number, number]> {
  if (series.length !== 1) throw new Error(`${what}: expected one series, got ${JSON.stringify(series.map((s) => s.metric))}`);
  return series[0].values;
}

describe.each(platforms)('the library\'s own metrics through a Redis outage ($name)', (platform: Platform) => {
  let started: StartedApp | undefined;
  let prometheus: PrometheusServer | undefined;
  let provider: MeterProvider | undefined;
  const spoolDir = mkdtempSync(join(tmpdir(), 'deferred-work-metrics-spool-'));

  afterAll(async () => {
    await started?.close();
    await provider?.shutdown();
    await prometheus?.stop();
    rmSync(spoolDir, { recursive: true, force: true });
  });

  it('shows pending rising while Redis is down and draining to 0, delivered = requests exactly, in Prometheus and OpenTelemetry; every dashboard panel has data', async () => {
    registry = new Registry();
    const otelExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    provider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: otelExporter, exportIntervalMillis: 250, exportTimeoutMillis: 200 })] });
    const redisOptions = { host: redis.host, port: redis.port, retryStrategy: () => 50, disconnectTimeout: 100 };
    started = await startApp(platform, {
      imports: [
        BullModule.forRoot({ redis: redisOptions, prefix: `${RUN}-${platform.name}` }),
        BullModule.registerQueue({ name: 'mail' }),
        DeferredWorkModule.forRootAsync({
          inject: [ModuleRef],
          useFactory: (moduleRef: ModuleRef) => ({ sinks: [new BullSink({ moduleRef })], spool: { dir: spoolDir } }),
        }),
        DeferredWorkMetricsModule.forRoot({ prometheus: { registry }, opentelemetry: { meter: provider.getMeter('test') }, deliveryLag: true }),
      ],
      controllers: [OrdersController, MetricsController],
    });
    const work = started.app.get(DeferredWork);
    const { port } = new URL(started.url);
    prometheus = new PrometheusServer({ host: '127.0.0.1', port: Number(port), path: '/metrics' }, 250);
    await prometheus.start();
    await prometheus.scraped();

    const t0 = Date.now() / 1000;
    const outage: { from?: number; to?: number; done?: Promise<void> } = {};
    const statuses = await load(started.url, range(0, REQUESTS).map((i) => `/order/${i}`), 10, (done) => {
      if (done !== 500) return;
      outage.from = Date.now() / 1000;
      outage.done = redis.stop().then(async () => {
        await new Promise((r) => setTimeout(r, OUTAGE_MS));
        outage.to = Date.now() / 1000;
        await redis.start();
      });
    });
    await outage.done;
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(await work.flush(30_000)).toBe(true);
    const stats = work.stats();
    expect(stats.sinks.bull).toMatchObject({ accepted: REQUESTS, delivered: REQUESTS, pending: 0, dropped: 0, deadLettered: 0 });
    expect(stats.sinks.bull.failedWrites).toBeGreaterThan(0);
    await prometheus.scraped();
    await prometheus.scraped();
    const t1 = Date.now() / 1000;

    // Delivered equals the requests made, exactly; nothing dropped or dead-lettered.
    const value = async (promql: string) => (await prometheus!.query(promql)).map((s) => s.value);
    expect(await value('deferred_work_sent_items_total{sink="bull",kind="job"}')).toEqual([REQUESTS]);
    expect(await value('deferred_work_accepted_items_total{sink="bull",kind="job"}')).toEqual([REQUESTS]);
    expect(await value('deferred_work_send_failed_items_total{sink="bull"}')).toEqual([0]);
    // Dead letters by reason: every reason present at 0 (a closed set), none counted.
    const reasons = await prometheus.query('deferred_work_dead_lettered_items_total{sink="bull"}');
    expect(reasons.map((s) => s.metric.reason).sort()).toEqual(['attempts-exhausted', 'closed', 'expired', 'not-retryable', 'shutdown', 'shutdown-in-flight', 'timeout', 'unreadable']);
    expect(reasons.map((s) => s.value)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(await value('deferred_work_enqueue_failed_items_total{sink="bull"}')).toEqual([0]);
    expect(await value('deferred_work_sent_items_total{sink="callbacks",kind="callback"}')).toEqual([REQUESTS]);
    expect((await value('deferred_work_failed_writes_total{sink="bull"}'))[0]).toBeGreaterThan(0);
    expect((await value('sum(deferred_work_write_errors_total{sink="bull"})'))[0]).toBeGreaterThan(0);
    expect(await value('deferred_work_delivery_lag_seconds_count{sink="bull",kind="job"}')).toEqual([REQUESTS]);

    // Pending rose while Redis was down, and drained back to 0 after.
    const pending = only(await prometheus.queryRange('deferred_work_queue_size{sink="bull"}', Math.floor(t0), Math.ceil(t1), 0.25), 'pending');
    const peak = pending.reduce((best, point) => (point[1] > best[1] ? point : best), [0, 0] as [number, number]);
    expect(peak[1]).toBeGreaterThan(10);
    expect(peak[0]).toBeGreaterThanOrEqual(Math.floor(outage.from!));
    expect(pending.filter(([t]) => t > peak[0]).some(([, v]) => v === 0)).toBe(true);
    expect(pending.at(-1)![1]).toBe(0);

    // The same through OpenTelemetry: the reader's collections show pending rise and drain, and the final count.
    await provider.forceFlush();
    const otelPending: number[] = [];
    let otelSent: unknown;
    for (const collection of otelExporter.getMetrics()) {
      for (const metric of collection.scopeMetrics.flatMap((scope) => scope.metrics)) {
        const point = metric.dataPoints.find((p) => p.attributes.sink === 'bull' && (p.attributes.kind ?? 'job') === 'job');
        if (!point) continue;
        if (metric.descriptor.name === 'deferred_work.queue_size') otelPending.push(point.value as number);
        if (metric.descriptor.name === 'deferred_work.sent_items') otelSent = point.value;
      }
    }
    expect(Math.max(...otelPending)).toBeGreaterThan(10);
    expect(otelPending.at(-1)).toBe(0);
    expect(otelSent).toBe(REQUESTS);

    // Every panel of the dashboard returns data over the run (Grafana's variables as "all sinks").
    const empty: string[] = [];
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        const expr = target.expr.replaceAll('$__rate_interval', '2s').replaceAll('$sink', '.*');
        const series = await prometheus.queryRange(expr, Math.floor(t0), Math.ceil(t1), 0.5);
        if (!series.some((s) => s.values.some(([, v]) => Number.isFinite(v)))) empty.push(`${panel.title}: ${target.expr}`);
      }
    }
    expect(empty).toEqual([]);

    const chartPath = process.env.DEFERRED_WORK_OUTAGE_CHART;
    if (chartPath && platform.name === 'express') {
      const since = (points: Array<[number, number]>) => points.map(([t, v]) => [Math.round((t - t0) * 100) / 100, v] as [number, number]);
      const rangeOf = async (expr: string) => since(only(await prometheus!.queryRange(expr, Math.floor(t0), Math.ceil(t1), 0.25), expr));
      const svg = renderOutageChart(
        'A Redis outage, as the library\'s own metrics show it',
        [
          { title: 'Delivered items/s (bull)', unit: 'items/s', points: await rangeOf('rate(deferred_work_sent_items_total{sink="bull"}[1s])'), color: '#2e86ab' },
          { title: 'Pending items (bull)', unit: 'items', points: await rangeOf('deferred_work_queue_size{sink="bull"}'), color: '#e4572e' },
          { title: 'Failed writes/s (bull)', unit: 'writes/s', points: await rangeOf('rate(deferred_work_failed_writes_total{sink="bull"}[1s])'), color: '#8e6bd8' },
          { title: 'Spool bytes (bull)', unit: 'bytes', points: await rangeOf('deferred_work_spool_bytes{sink="bull"}'), color: '#3d5a80' },
        ],
        [outage.from! - t0, outage.to! - t0],
        `${REQUESTS} requests (10 at a time), each deferring one Bull job; Redis stopped for ${OUTAGE_MS / 1000} s; Prometheus scraping every 250 ms.`,
      );
      writeFileSync(chartPath, svg);
    }
  }, 120_000);
});
