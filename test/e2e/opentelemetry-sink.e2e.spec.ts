import { Controller, Get, Param } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { OpenTelemetryMetricsSink } from 'nestjs-deferred-work/opentelemetry';
import { eventually } from '../support/eventually';
import { range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/** The SDK's pull reader: collect() on demand, cumulative temporality. */
class PullReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
  async byName(): Promise<Map<string, MetricData>> {
    const { resourceMetrics, errors } = await this.collect();
    expect(errors).toEqual([]);
    return new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]));
  }
}

@Controller()
class ShopController {
  @Get('orders/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    const n = Number(id);
    work.metric('orders.created', 1, { channel: n % 4 === 0 ? 'app' : 'web' });
    work.metric('order.value', n);
    work.metric('carts.open', n % 2 === 0 ? 1 : -1); // up-down: +1 / -1
    work.metric('queue.depth', n, { queue: 'mail' }); // gauge: last value
    work.metric('orders.deleted', 1); // not declared: rejected
    return { id: n };
  }
}

const N = 40;

describe.each(platforms)('OpenTelemetryMetricsSink on $name', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let reader: PullReader;
  let provider: MeterProvider;

  beforeEach(async () => {
    reader = new PullReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider); // the sink's default: metrics.getMeter('nestjs-deferred-work')
    started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [
            new OpenTelemetryMetricsSink({
              metrics: [
                { name: 'orders.created', type: 'counter', help: 'Orders created', unit: '{order}', labelNames: ['channel'] },
                { name: 'order.value', type: 'histogram', unit: 'EUR', buckets: [10, 50, 100] },
                { name: 'carts.open', type: 'upDownCounter' },
                { name: 'queue.depth', type: 'gauge', labelNames: ['queue'] },
              ],
            }),
          ],
          flushIntervalMs: 1,
        }),
      ],
      controllers: [ShopController],
    });
  });
  afterEach(async () => {
    await started.close();
    await provider.shutdown();
    metrics.disable();
  });

  it('N requests → the real SDK collects exact sums, counts, buckets and last values; undeclared names are rejected and counted', async () => {
    const ids = range(1, N + 1);
    for (const id of ids) expect((await fetch(`${started.url}/orders/${id}`)).status).toBe(200);
    const work = started.app.get(DeferredWork);
    await eventually(() => expect(work.stats().sinks.opentelemetry).toMatchObject({ delivered: 4 * N, pending: 0 }));
    expect(work.stats().rejected).toBe(N);

    const got = await reader.byName();
    expect(got.get('orders.created')!.descriptor).toMatchObject({ name: 'orders.created', description: 'Orders created', unit: '{order}' });
    expect(got.get('orders.created')!.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
      [{ channel: 'web' }, 30],
      [{ channel: 'app' }, 10],
    ]);
    expect(got.get('order.value')!.dataPoints.map((p) => p.value)).toEqual([
      expect.objectContaining({ count: N, sum: 820, min: 1, max: 40, buckets: { boundaries: [10, 50, 100], counts: [10, 30, 0, 0] } }),
    ]);
    expect(got.get('carts.open')!.dataPoints.map((p) => p.value)).toEqual([0]); // 20 × +1, 20 × -1
    expect(got.get('queue.depth')!.dataPoints.map((p) => [p.attributes, p.value])).toEqual([[{ queue: 'mail' }, 40]]);
    expect(got.has('orders.deleted')).toBe(false);
  });
});
