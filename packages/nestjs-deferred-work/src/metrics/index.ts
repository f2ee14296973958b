/**
 * The library's own metrics (`nestjs-deferred-work/metrics`): `DeferredWorkMetricsModule` exports
 * its state to the app's prom-client registry and/or OpenTelemetry meter (`prom-client` and
 * `@opentelemetry/api` as optional peers, loaded only when chosen). See docs/operations.md.
 */
export { DeferredWorkMetricsModule } from './deferred-work-metrics.module';
export { DeferredWorkMetrics } from './deferred-work-metrics.service';
export { DEFERRED_WORK_METRICS_OPTIONS } from './deferred-work-metrics.module-definition';
export type { DeferredWorkMetricsOptions, DeferredWorkOpenTelemetryOptions, DeferredWorkPrometheusOptions } from './metrics-options.interface';
