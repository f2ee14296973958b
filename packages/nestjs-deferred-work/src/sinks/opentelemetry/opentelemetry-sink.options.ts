import type { Meter } from '@opentelemetry/api';
import type { MetricDeclaration } from '../kit/metric-catalog';

/** One instrument the {@link OpenTelemetryMetricsSink} records to, declared up front. */
export interface OpenTelemetryMetricDeclaration extends MetricDeclaration {
  /**
   * The name `metric()` calls use, kept as the instrument's name (after `prefix`): dots are
   * OpenTelemetry's own separator (`orders.created`, `http.server.handler_ms`). It must be a valid
   * instrument name: a letter, then up to 254 letters, digits, `_`, `.`, `-` or `/`.
   */
  name: string;
  /**
   * `counter` → `Counter.add`; `histogram` → `Histogram.record`; `gauge` → `Gauge.record` (the
   * synchronous gauge); `upDownCounter` → `UpDownCounter.add` (negative values subtract).
   */
  type: MetricDeclaration['type'];
  /** The instrument's description. Default `''`. */
  help?: string;
  /** The instrument's unit (UCUM, e.g. `'ms'`, `'By'`, `'{order}'`). Default `''`. */
  unit?: string;
  /** Attribute (tag) names items may carry; any non-empty strings. Default `[]`. */
  labelNames?: readonly string[];
  /** Histogram bucket boundaries, given to the SDK as advice (`explicitBucketBoundaries`); a View still wins. Default: the SDK's. */
  buckets?: readonly number[];
  /** Most distinct attribute sets for this instrument. Default: the sink's `maxLabelSets` (`1000`). */
  maxLabelSets?: number;
}

/** Options of {@link OpenTelemetryMetricsSink}. */
export interface OpenTelemetryMetricsSinkOptions {
  /** Sink name used by `routing`, `sinkOptions` and `@AfterResponse({ sinks })`. Default `'opentelemetry'`. */
  name?: string;
  /** Every instrument the sink records to; an item with any other name is rejected when it is deferred. Required, non-empty. */
  metrics: readonly OpenTelemetryMetricDeclaration[];
  /**
   * The meter to create the instruments with. Default: `metrics.getMeter(meterName)` of
   * `@opentelemetry/api`, looked up at the first write (so an SDK started after the module was
   * configured is still found) and again while it is the no-op meter.
   */
  meter?: Meter;
  /** Name of the meter taken from the global `MeterProvider` when `meter` is not given. Default `'nestjs-deferred-work'`. */
  meterName?: string;
  /** Prepended to every instrument name, e.g. `'myapp.'`. Default `''`. */
  prefix?: string;
  /** Most distinct attribute sets per instrument; a new one beyond it is rejected and counted. Default `1000`. */
  maxLabelSets?: number;
}

/** Defaults of {@link OpenTelemetryMetricsSinkOptions}. */
export const OPENTELEMETRY_SINK_DEFAULTS = Object.freeze({
  name: 'opentelemetry',
  meterName: 'nestjs-deferred-work',
  prefix: '',
  maxLabelSets: 1000,
});
