import { jest } from '@jest/globals';
import { Counter, Gauge, Registry } from 'prom-client';
import type { MetricItem, SinkItem } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { prometheusMetricName } from './prometheus-name';
import { PrometheusSink } from './prometheus.sink';
import type { PrometheusSinkOptions } from './prometheus-sink.options';

const metric = (name: string, value: number, tags?: Record<string, string>): MetricItem => ({
  kind: 'metric',
  name,
  value,
  tags,
  when: 'always',
  createdAt: 0,
});
const signal = new AbortController().signal;
const write = (sink: PrometheusSink, items: SinkItem[]) => sink.write(items, { signal, attempt: 1 });

describe('prometheusMetricName (the one name rule)', () => {
  it.each([
    ['orders.created', '', 'orders_created'],
    ['orders_created', '', 'orders_created'],
    ['http.server.handler_ms', '', 'http_server_handler_ms'],
    ['cache-hit/ratio', '', 'cache_hit_ratio'],
    ['5xx.count', '', '_5xx_count'],
    ['orders:created', '', 'orders_created'],
    ['orders.created', 'shop_', 'shop_orders_created'],
    ['5xx', 'shop_', 'shop__5xx'],
  ])('%s with prefix %j → %s', (name, prefix, expected) => {
    expect(prometheusMetricName(name, prefix)).toBe(expected);
  });
});

describe('PrometheusSink', () => {
  let registry: Registry;
  beforeEach(() => (registry = new Registry()));
  const make = (options: Partial<PrometheusSinkOptions> = {}) =>
    new PrometheusSink({
      registry,
      metrics: [
        { name: 'orders.created', type: 'counter', help: 'Orders created', labelNames: ['channel'] },
        { name: 'order_value', type: 'histogram', help: 'Order value', buckets: [10, 100] },
        { name: 'queue.depth', type: 'gauge', help: 'Queue depth', labelNames: ['queue'] },
        { name: 'sessions.open', type: 'upDownCounter', help: 'Open sessions' },
      ],
      ...options,
    });

  it('maps counter → inc, histogram → observe, gauge → set, upDownCounter → gauge inc, with the items\' names mapped by the rule', async () => {
    const sink = make();
    sink.attach();
    expect(
      await write(sink, [
        metric('orders.created', 1, { channel: 'web' }),
        metric('orders_created', 2, { channel: 'web' }),
        metric('orders.created', 1, { channel: 'app' }),
        metric('order_value', 5),
        metric('order_value', 50),
        metric('queue.depth', 7, { queue: 'mail' }),
        metric('queue.depth', 3, { queue: 'mail' }),
        metric('sessions.open', 5),
        metric('sessions.open', -2),
      ]),
    ).toBeUndefined();
    const text = await registry.metrics();
    expect(text).toContain('# HELP orders_created Orders created\n# TYPE orders_created counter\norders_created{channel="web"} 3\norders_created{channel="app"} 1');
    expect(text).toContain('order_value_bucket{le="10"} 1\norder_value_bucket{le="100"} 2\norder_value_bucket{le="+Inf"} 2\norder_value_sum 55\norder_value_count 2');
    expect(text).toContain('queue_depth{queue="mail"} 3');
    expect(text).toContain('# TYPE sessions_open gauge\nsessions_open 3');
  });

  it('creates the metrics in the registry at attach (before any item), with the prefix', async () => {
    const sink = make({ prefix: 'shop_' });
    sink.attach();
    expect(registry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name)).toEqual([
      'shop_orders_created',
      'shop_order_value',
      'shop_queue_depth',
      'shop_sessions_open',
    ]);
    await write(sink, [metric('orders.created', 4)]);
    expect(await registry.getSingleMetricAsString('shop_orders_created')).toContain('shop_orders_created 4');
  });

  it('rejects an undeclared name, an undeclared label, a falling counter and a conflicting own type at validate(), with the fix', () => {
    const sink = make();
    expect(() => sink.validate(metric('orders.deleted', 1))).toThrow(/metric "orders.deleted" \(orders_deleted\) is not declared. Add it to the sink's "metrics" option.*"orders.created"/);
    expect(() => sink.validate(metric('orders.created', 1, { region: 'eu' }))).toThrow(/label "region", which is not declared \(declared: "channel"\)/);
    expect(() => sink.validate(metric('orders.created', -1))).toThrow(/counters only go up.*'upDownCounter'/);
    expect(() => sink.validate({ ...metric('orders.created', 1), type: 'gauge' } as MetricItem)).toThrow(/says its type is "gauge", but it is declared as a counter/);
    expect(() => sink.validate(metric('queue.depth', 1, { queue: {} as never }))).toThrow(/label "queue" is an object; label values are strings/);
    expect(() => sink.validate(metric('order_value', Number.NaN))).toThrow(/finite number/);
    expect(() => sink.validate(metric('orders.created', 1, { channel: 'web' }))).not.toThrow();
  });

  it('holds the cardinality limit per metric: a new label set beyond it is rejected, known ones still pass; warned once per episode', async () => {
    const sink = make({ maxLabelSets: 3 });
    const warn = jest.spyOn((sink as unknown as { catalog: { rules: { warn: (m: string) => void } } }).catalog['rules'], 'warn').mockImplementation(() => undefined);
    for (const channel of ['a', 'b', 'c']) sink.validate(metric('orders.created', 1, { channel }));
    expect(() => sink.validate(metric('orders.created', 1, { channel: 'd' }))).toThrow(/would exceed its limit of 3 label sets/);
    expect(() => sink.validate(metric('orders.created', 1, { channel: 'e' }))).toThrow(/limit of 3/);
    expect(() => sink.validate(metric('orders.created', 1, { channel: 'a' }))).not.toThrow();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatch(/"orders_created" reached its limit of 3 label sets.*logged once per episode/);
    // Another metric has its own budget.
    expect(() => sink.validate(metric('queue.depth', 1, { queue: 'x' }))).not.toThrow();
    // A write that bypassed validate is held to the limit too (refused, not retried).
    const result = await write(sink, [metric('orders.created', 1, { channel: 'f' }), metric('orders.created', 1, { channel: 'b' })]);
    expect(result?.failed?.map((f) => [f.index, f.retryable])).toEqual([[0, false]]);
  });

  it('a per-metric maxLabelSets overrides the sink-wide one', () => {
    const sink = new PrometheusSink({
      registry,
      maxLabelSets: 100,
      metrics: [{ name: 'x', type: 'counter', help: 'x', labelNames: ['k'], maxLabelSets: 1 }],
    });
    sink.validate(metric('x', 1, { k: '1' }));
    expect(() => sink.validate(metric('x', 1, { k: '2' }))).toThrow(/limit of 1/);
  });

  it('reuses a metric the app registered under the same name when it fits, and fails attach with the fix when it does not', async () => {
    const existing = new Counter({ name: 'orders_created', help: 'app-owned', labelNames: ['channel', 'region'], registers: [registry] });
    const sink = make();
    sink.attach();
    await write(sink, [metric('orders.created', 2, { channel: 'web' })]);
    expect((await existing.get()).values).toEqual([{ value: 2, labels: { channel: 'web' } }]);

    const other = new Registry();
    new Gauge({ name: 'orders_created', help: 'a gauge', registers: [other] });
    expect(() => make({ registry: other }).attach()).toThrow(SinkConfigError);
    expect(() => make({ registry: other }).attach()).toThrow(/already has a metric "orders_created" \(Gauge, labels \[\]\) that does not fit.*a counter, so a prom-client Counter, labels \[channel\]/);
  });

  it('fails a record that is not a metric alone, not retried', async () => {
    const sink = make();
    const result = await write(sink, [{ kind: 'log', level: 'info', message: 'x', when: 'always', createdAt: 0 }, metric('orders.created', 1)]);
    expect(result?.failed).toEqual([{ index: 0, error: expect.objectContaining({ message: expect.stringMatching(/takes metric items only/) }), retryable: false }]);
    expect(await registry.getSingleMetricAsString('orders_created')).toContain('orders_created 1');
  });

  it.each([
    ['no metrics', { metrics: [] }, /option "metrics" must be a non-empty array/],
    ['a bad type', { metrics: [{ name: 'a', type: 'summary', help: 'a' }] }, /metrics\[0\]\.type of "a" must be one of 'counter', 'histogram', 'gauge', 'upDownCounter', got "summary"/],
    ['no help', { metrics: [{ name: 'a', type: 'counter' }] }, /needs a "help" text/],
    ['two names that map to one', { metrics: [{ name: 'a.b', type: 'counter', help: 'x' }, { name: 'a_b', type: 'counter', help: 'x' }] }, /"a_b" and "a.b" both map to "a_b"/],
    ['a bad label', { metrics: [{ name: 'a', type: 'counter', help: 'x', labelNames: ['http.method'] }] }, /label "http.method" is not a valid Prometheus label name/],
    ['le on a histogram', { metrics: [{ name: 'a', type: 'histogram', help: 'x', labelNames: ['le'] }] }, /"le" is reserved on histograms/],
    ['buckets on a counter', { metrics: [{ name: 'a', type: 'counter', help: 'x', buckets: [1] }] }, /only histograms take "buckets"/],
    ['unsorted buckets', { metrics: [{ name: 'a', type: 'histogram', help: 'x', buckets: [5, 1] }] }, /strictly increasing order/],
    ['a bad prefix', { prefix: 'my-app', metrics: [{ name: 'a', type: 'counter', help: 'x' }] }, /option "prefix" must be ''/],
    ['a bad maxLabelSets', { maxLabelSets: 0, metrics: [{ name: 'a', type: 'counter', help: 'x' }] }, /option "maxLabelSets" must be a whole number >= 1/],
    ['a bad registry', { registry: {} as Registry, metrics: [{ name: 'a', type: 'counter', help: 'x' }] }, /option "registry" must be a prom-client Registry/],
  ])('throws a SinkConfigError at construction for %s', (_what, options, message) => {
    expect(() => new PrometheusSink({ registry, ...(options as PrometheusSinkOptions) })).toThrow(SinkConfigError);
    expect(() => new PrometheusSink({ registry, ...(options as PrometheusSinkOptions) })).toThrow(message);
  });
});
