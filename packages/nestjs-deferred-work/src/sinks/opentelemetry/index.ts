export { OpenTelemetryMetricsSink } from './opentelemetry-metrics.sink';
export {
  OPENTELEMETRY_SINK_DEFAULTS,
  type OpenTelemetryMetricDeclaration,
  type OpenTelemetryMetricsSinkOptions,
} from './opentelemetry-sink.options';
export type { MetricInstrumentType } from '../kit/metric-catalog';
