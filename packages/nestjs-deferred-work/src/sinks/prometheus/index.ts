/**
 * Deferred metric points recorded in prom-client metrics (`prom-client` as an optional peer).
 *
 * @module nestjs-deferred-work/prometheus
 */
export { PrometheusSink } from './prometheus.sink';
export { prometheusMetricName } from './prometheus-name';
export {
  PROMETHEUS_SINK_DEFAULTS,
  type PrometheusMetricDeclaration,
  type PrometheusSinkOptions,
} from './prometheus-sink.options';
export type { MetricInstrumentType } from '../kit/metric-catalog';
