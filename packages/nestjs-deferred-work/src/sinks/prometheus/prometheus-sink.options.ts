import type { Registry } from 'prom-client';
import type { MetricDeclaration } from '../kit/metric-catalog';

/** One metric the {@link PrometheusSink} updates, declared up front. */
export interface PrometheusMetricDeclaration extends MetricDeclaration {
  /**
   * The name `metric()` calls use, in either form: `orders.created` or `orders_created` (both map
   * to `orders_created`, see {@link prometheusMetricName}).
   */
  name: string;
  /**
   * `counter` → `Counter.inc(labels, value)`; `histogram` → `Histogram.observe(labels, value)`;
   * `gauge` → `Gauge.set(labels, value)`; `upDownCounter` → `Gauge.inc(labels, value)` (a Prometheus
   * gauge whose value is added to, negative values subtracting).
   */
  type: MetricDeclaration['type'];
  /** The metric's HELP text (required by Prometheus). */
  help: string;
  /**
   * Label names, valid Prometheus label names (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`;
   * not `le` on a histogram). Items' tag keys must be among them. Default `[]`.
   */
  labelNames?: readonly string[];
  /** Histogram buckets (upper bounds, strictly increasing). Default: prom-client's `[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]`. */
  buckets?: readonly number[];
  /** Most distinct label sets for this metric. Default: the sink's `maxLabelSets` (`1000`). */
  maxLabelSets?: number;
}

/** Options of {@link PrometheusSink}. */
export interface PrometheusSinkOptions {
  /** Sink name used by `routing`, `sinkOptions` and `@AfterResponse({ sinks })`. Default `'prometheus'`. */
  name?: string;
  /** Every metric the sink updates; an item with any other name is rejected when it is deferred. Required, non-empty. */
  metrics: readonly PrometheusMetricDeclaration[];
  /**
   * The registry the metrics live in, e.g. the one your `/metrics` route serves. Default: prom-client's
   * default `register` (the one `@willsoto/nestjs-prometheus` serves unless configured otherwise).
   */
  registry?: Registry;
  /** Prepended to every metric name after the name rule, e.g. `'myapp_'`. Default `''`. */
  prefix?: string;
  /** Most distinct label sets (series) per metric; a new one beyond it is rejected and counted. Default `1000`. */
  maxLabelSets?: number;
}

/** Defaults of {@link PrometheusSinkOptions}. */
export const PROMETHEUS_SINK_DEFAULTS = Object.freeze({ name: 'prometheus', prefix: '', maxLabelSets: 1000 });
