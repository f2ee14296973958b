import { jest } from '@jest/globals';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import type { MetricItem, SinkItem } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { OpenTelemetryMetricsSink } from './opentelemetry-metrics.sink';
import type { OpenTelemetryMetricsSinkOptions } from './opentelemetry-sink.options';

/** A pull reader: `collect()` on demand, cumulative. */
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

const metric = (name: string, value: number, tags?: Record<string, string>): MetricItem => ({ kind: 'metric', name, value, tags, when: 'always', createdAt: 0 });
const signal = new AbortController().signal;
const write = (sink: OpenTelemetryMetricsSink, items: SinkItem[]) => sink.write(items, { signal, attempt: 1 });
const points = (data: MetricData | undefined) => data?.dataPoints.map((p) => [p.attributes, p.value]);

const declarations: OpenTelemetryMetricsSinkOptions['metrics'] = [
  { name: 'orders.created', type: 'counter', help: 'Orders created', unit: '{order}', labelNames: ['channel'] },
  { name: 'order.value', type: 'histogram', buckets: [10, 100], unit: 'EUR' },
  { name: 'queue.depth', type: 'gauge', labelNames: ['queue'] },
  { name: 'sessions.open', type: 'upDownCounter' },
];

describe('OpenTelemetryMetricsSink', () => {
  let reader: PullReader;
  let provider: MeterProvider;
  beforeEach(() => {
    reader = new PullReader();
    provider = new MeterProvider({ readers: [reader] });
  });
  afterEach(() => provider.shutdown());

  it('records counter → add, histogram → record, gauge → record, upDownCounter → add, names kept as written', async () => {
    const sink = new OpenTelemetryMetricsSink({ meter: provider.getMeter('test'), metrics: declarations });
    expect(
      await write(sink, [
        metric('orders.created', 1, { channel: 'web' }),
        metric('orders.created', 2, { channel: 'web' }),
        metric('orders.created', 1, { channel: 'app' }),
        metric('order.value', 5),
        metric('order.value', 50),
        metric('queue.depth', 7, { queue: 'mail' }),
        metric('queue.depth', 3, { queue: 'mail' }),
        metric('sessions.open', 5),
        metric('sessions.open', -2),
      ]),
    ).toBeUndefined();
    const got = await reader.byName();
    expect(got.get('orders.created')?.descriptor).toMatchObject({ description: 'Orders created', unit: '{order}' });
    expect(points(got.get('orders.created'))).toEqual([
      [{ channel: 'web' }, 3],
      [{ channel: 'app' }, 1],
    ]);
    const histogram = got.get('order.value')!;
    expect(histogram.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(histogram.dataPoints[0].value).toMatchObject({ count: 2, sum: 55, buckets: { boundaries: [10, 100], counts: [1, 1, 0] } });
    expect(points(got.get('queue.depth'))).toEqual([[{ queue: 'mail' }, 3]]);
    expect(points(got.get('sessions.open'))).toEqual([[{}, 3]]);
  });

  it('puts the prefix before every name', async () => {
    const sink = new OpenTelemetryMetricsSink({ meter: provider.getMeter('test'), prefix: 'shop.', metrics: declarations });
    await write(sink, [metric('orders.created', 4)]);
    expect(points((await reader.byName()).get('shop.orders.created'))).toEqual([[{}, 4]]);
  });

  it('rejects an undeclared name, an undeclared attribute, a falling counter and a new attribute set beyond the limit', () => {
    const sink = new OpenTelemetryMetricsSink({ meter: provider.getMeter('test'), metrics: declarations, maxLabelSets: 2 });
    jest.spyOn(sink['logger'], 'warn').mockImplementation(() => undefined);
    expect(() => sink.validate(metric('orders_created', 1))).toThrow(/metric "orders_created" \(orders_created\) is not declared/);
    expect(() => sink.validate(metric('orders.created', 1, { region: 'eu' }))).toThrow(/label "region", which is not declared/);
    expect(() => sink.validate(metric('orders.created', -1))).toThrow(/counters only go up/);
    sink.validate(metric('orders.created', 1, { channel: 'a' }));
    sink.validate(metric('orders.created', 1, { channel: 'b' }));
    expect(() => sink.validate(metric('orders.created', 1, { channel: 'c' }))).toThrow(/limit of 2 label sets/);
    expect(() => sink.validate(metric('sessions.open', -1))).not.toThrow();
  });

  it('takes the global meter at the first write, and again once a provider is registered after a no-op start', async () => {
    const sink = new OpenTelemetryMetricsSink({ metrics: declarations });
    const warn = jest.spyOn(sink['logger'], 'warn').mockImplementation(() => undefined);
    await write(sink, [metric('orders.created', 1)]); // no provider yet: the no-op meter
    await write(sink, [metric('orders.created', 1)]);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatch(/no OpenTelemetry MeterProvider is registered/);
    expect(metrics.setGlobalMeterProvider(provider)).toBe(true);
    try {
      await write(sink, [metric('orders.created', 2), metric('orders.created', 3)]);
      expect(points((await reader.byName()).get('orders.created'))).toEqual([[{}, 5]]);
    } finally {
      metrics.disable();
    }
  });

  it.each([
    ['no metrics', { metrics: [] }, /option "metrics" must be a non-empty array/],
    ['an invalid instrument name', { metrics: [{ name: '1st', type: 'counter' }] }, /gives the instrument name "1st", which OpenTelemetry does not accept/],
    ['a prefix that makes names invalid', { prefix: '_', metrics: [{ name: 'a', type: 'counter' }] }, /"_a", which OpenTelemetry does not accept/],
    ['a bad type', { metrics: [{ name: 'a', type: 'summary' }] }, /must be one of 'counter', 'histogram', 'gauge', 'upDownCounter'/],
    ['a bad meter', { meter: {}, metrics: [{ name: 'a', type: 'counter' }] }, /option "meter" must be an OpenTelemetry Meter/],
    ['a bad unit', { metrics: [{ name: 'a', type: 'counter', unit: 5 }] }, /"unit" of "a" must be a string/],
  ])('throws a SinkConfigError at construction for %s', (_what, options, message) => {
    const make = () => new OpenTelemetryMetricsSink(options as unknown as OpenTelemetryMetricsSinkOptions);
    expect(make).toThrow(SinkConfigError);
    expect(make).toThrow(message);
  });
});
