import { Controller, Get, Param } from '@nestjs/common';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { DeferredWorkMetricsModule, type DeferredWorkMetricsOptions } from 'nestjs-deferred-work/metrics';
import { platforms, startApp, type StartedApp } from '../../../../test/support/platforms';
import { resolveMetricsOptions } from './resolve-metrics-options';

@Controller()
class OrdersController {
  @Get('orders/:id')
  @AfterResponse({ timing: true })
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'confirm', { id });
    work.log('info', 'order placed', { id });
    work.run(() => undefined);
    return { id };
  }
}

async function start(metrics: DeferredWorkMetricsOptions): Promise<StartedApp> {
  return startApp(platforms[0], {
    imports: [
      DeferredWorkModule.forRoot({ sinks: [new MemorySink()], timing: true, maxBatchSize: 10 }),
      DeferredWorkMetricsModule.forRoot(metrics),
    ],
    controllers: [OrdersController],
  });
}

/** One sample of the text exposition: `name{labels} value`. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('DeferredWorkMetricsModule', () => {
  it('registers the state in a prom-client registry, read at scrape time, and takes it out at shutdown', async () => {
    const registry = new Registry();
    const app = await start({ prometheus: { registry }, deliveryLag: true, routeTimings: true });
    try {
      for (let i = 0; i < 5; i++) await (await fetch(`${app.url}/orders/${i}`)).text();
      const work = app.app.get(DeferredWork);
      expect(await work.settled(5000)).toBe(true);
      const text = await registry.metrics();
      expect(sample(text, 'deferred_work_accepted_items_total', 'sink="memory",kind="job"')).toBe(5);
      expect(sample(text, 'deferred_work_sent_items_total', 'sink="memory",kind="job"')).toBe(5);
      expect(sample(text, 'deferred_work_sent_items_total', 'sink="memory",kind="log"')).toBe(5);
      expect(sample(text, 'deferred_work_sent_items_total', 'sink="callbacks",kind="callback"')).toBe(5);
      expect(sample(text, 'deferred_work_queue_size', 'sink="memory"')).toBe(0);
      expect(sample(text, 'deferred_work_queue_capacity', 'sink="memory"')).toBeUndefined(); // no count cap by default
      expect(sample(text, 'deferred_work_queue_held_capacity_bytes', 'sink="memory"')).toBe(33_554_432);
      expect(sample(text, 'deferred_work_queue_held_bytes', 'sink="memory"')).toBe(0);
      expect(sample(text, 'deferred_work_rejected_items_total', '')).toBe(0);
      // Every item in some write: per request a job, a log and the two timing metrics.
      expect(sample(text, 'deferred_work_write_batch_size_sum', 'sink="memory"')).toBe(20);
      expect(sample(text, 'deferred_work_sent_items_total', 'sink="memory",kind="metric"')).toBe(10);
      expect(sample(text, 'deferred_work_write_duration_seconds_count', 'sink="memory",outcome="success"')).toBeGreaterThan(0);
      expect(sample(text, 'deferred_work_delivery_lag_seconds_count', 'sink="memory",kind="job"')).toBe(5);
      expect(sample(text, 'deferred_work_route_handler_duration_seconds_count', 'method="GET",route="/orders/:id"')).toBe(5);
      expect(sample(text, 'deferred_work_route_send_duration_seconds_count', 'method="GET",route="/orders/:id"')).toBe(5);
    } finally {
      await app.close();
    }
    expect(registry.getMetricsAsArray()).toEqual([]);
  });

  it('creates OpenTelemetry instruments, observed at collection', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    const app = await start({ opentelemetry: { meter: provider.getMeter('test') } });
    try {
      for (let i = 0; i < 3; i++) await (await fetch(`${app.url}/orders/${i}`)).text();
      expect(await app.app.get(DeferredWork).settled(5000)).toBe(true);
      await reader.forceFlush();
      const metrics = exporter.getMetrics().at(-1)!.scopeMetrics.flatMap((scope) => scope.metrics);
      const points = (name: string) => metrics.find((m) => m.descriptor.name === name)?.dataPoints ?? [];
      const sent = points('deferred_work.sent_items').find((p) => p.attributes.sink === 'memory' && p.attributes.kind === 'job');
      expect(sent?.value).toBe(3);
      expect(points('deferred_work.queue_size').find((p) => p.attributes.sink === 'memory')?.value).toBe(0);
      const sizes = points('deferred_work.write_batch_size').find((p) => p.attributes.sink === 'memory');
      expect((sizes?.value as { sum: number }).sum).toBe(12);
    } finally {
      await app.close();
      await provider.shutdown();
    }
  });

  it('fails the bootstrap naming the metric when the registry already has it', async () => {
    const registry = new Registry();
    const first = await start({ prometheus: { registry } });
    try {
      await expect(start({ prometheus: { registry } })).rejects.toThrow(
        'DeferredWorkMetricsModule: the registry already has a metric named "deferred_work_accepted_items_total". Give the library\'s metrics another "prometheus.prefix"',
      );
      const other = await start({ prometheus: { registry, prefix: 'other_' } });
      await other.close();
    } finally {
      await first.close();
    }
  });

  it('checks its options, naming the option, what was given and the fix', () => {
    expect(() => resolveMetricsOptions({})).toThrow('DeferredWorkMetricsModule: no exporter chosen. Set "prometheus"');
    expect(() => resolveMetricsOptions({ prometheus: { prefix: '1x' } })).toThrow('invalid option "prometheus.prefix", got "1x". Use');
    expect(() => resolveMetricsOptions({ prometheus: { registry: {} as never } })).toThrow('invalid option "prometheus.registry", got an object without the expected methods. Pass a prom-client Registry');
    expect(() => resolveMetricsOptions({ opentelemetry: { meter: 3 as never } })).toThrow('invalid option "opentelemetry.meter", got 3.');
    expect(() => resolveMetricsOptions({ opentelemetry: true, deliveryLag: 'yes' as never })).toThrow('invalid option "deliveryLag", got "yes". Use true or false');
    expect(resolveMetricsOptions({ prometheus: true, opentelemetry: true })).toEqual({
      prometheus: { registry: undefined, prefix: 'deferred_work_' },
      opentelemetry: { meter: undefined, prefix: 'deferred_work.' },
      deliveryLag: false,
      routeTimings: false,
    });
  });
});
