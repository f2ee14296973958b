/**
 * Deferred metric points recorded through an OpenTelemetry `Meter` (`@opentelemetry/api` as an optional peer).
 *
 * @module nestjs-deferred-work/opentelemetry
 */
export { OpenTelemetryMetricsSink } from './opentelemetry-metrics.sink';
export {
  OPENTELEMETRY_SINK_DEFAULTS,
  type OpenTelemetryMetricDeclaration,
  type OpenTelemetryMetricsSinkOptions,
} from './opentelemetry-sink.options';
export type { MetricInstrumentType } from '../kit/metric-catalog';
