import type { Meter } from '@opentelemetry/api';
import type { Registry } from 'prom-client';

/** Where the library's own metrics go in Prometheus (prom-client). */
export interface DeferredWorkPrometheusOptions {
  /** The registry the metrics are registered in. Default: prom-client's default `register`. */
  registry?: Registry;
  /** Prefix of every metric name. Default `'deferred_work_'`. */
  prefix?: string;
}

/** Where the library's own metrics go in OpenTelemetry. */
export interface DeferredWorkOpenTelemetryOptions {
  /** The meter the instruments are created on. Default: `metrics.getMeter('nestjs-deferred-work')` of `@opentelemetry/api`. */
  meter?: Meter;
  /** Prefix of every instrument name. Default `'deferred_work.'`. */
  prefix?: string;
}

/**
 * Options of `DeferredWorkMetricsModule.forRoot()` / `forRootAsync()`: the library's own state
 * (counts by sink, kind and outcome, queues, writes, callbacks, spools, worker threads), read when
 * the app's metrics are collected — nothing is added to the request path. At least one of
 * `prometheus` and `opentelemetry` is needed. See docs/operations.md.
 */
export interface DeferredWorkMetricsOptions {
  /** Register the metrics in a prom-client registry; `true` for the defaults. Default: off. */
  prometheus?: DeferredWorkPrometheusOptions | boolean;
  /** Create the metrics as OpenTelemetry instruments; `true` for the defaults. Default: off. */
  opentelemetry?: DeferredWorkOpenTelemetryOptions | boolean;
  /**
   * Also a histogram of the time from an item's acceptance to its delivery, per sink and kind
   * (`delivery_lag_seconds`): one clock read per accepted item. Default `false`.
   */
  deliveryLag?: boolean;
  /**
   * Also histograms of the per-route times the `timing` option measures (`route_handler_duration_seconds`,
   * `route_send_duration_seconds`, labelled with method and route template). Default `false`.
   */
  routeTimings?: boolean;
}
