import type { Meter } from '@opentelemetry/api';
import type { Registry } from 'prom-client';
import type { DeferredWorkMetricsOptions } from './metrics-options.interface';

/** The options with every default applied. */
export interface ResolvedMetricsOptions {
  prometheus?: { registry?: Registry; prefix: string };
  opentelemetry?: { meter?: Meter; prefix: string };
  deliveryLag: boolean;
  routeTimings: boolean;
}

export const METRICS_DEFAULTS = { prometheusPrefix: 'deferred_work_', openTelemetryPrefix: 'deferred_work.' } as const;

const PROMETHEUS_PREFIX = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/;
const OTEL_PREFIX = /^([a-zA-Z][a-zA-Z0-9_.\-/]*)?$/;

function invalid(option: string, given: unknown, fix: string): Error {
  const shown = typeof given === 'function' ? 'a function' : given === null || typeof given !== 'object' ? JSON.stringify(given) ?? String(given) : `an object without the expected methods`;
  return new TypeError(`DeferredWorkMetricsModule: invalid option "${option}", got ${shown}. ${fix}`);
}

/** Checks the options and applies the defaults; throws naming the option, what was given and the fix. */
export function resolveMetricsOptions(options: DeferredWorkMetricsOptions | undefined): ResolvedMetricsOptions {
  if (options === null || typeof options !== 'object') {
    throw invalid('options', options, 'Pass an object, e.g. DeferredWorkMetricsModule.forRoot({ prometheus: true }).');
  }
  const flag = (name: 'deliveryLag' | 'routeTimings') => {
    const value = options[name] ?? false;
    if (typeof value !== 'boolean') throw invalid(name, value, `Use true or false (default false).`);
    return value;
  };
  const resolved: ResolvedMetricsOptions = { deliveryLag: flag('deliveryLag'), routeTimings: flag('routeTimings') };
  const section = <T extends object>(name: 'prometheus' | 'opentelemetry'): Partial<T> | undefined => {
    const value = options[name];
    if (value === undefined || value === false) return undefined;
    if (value === true) return {};
    if (value === null || typeof value !== 'object') throw invalid(name, value, `Use true for the defaults, or an object (see DeferredWorkMetricsOptions).`);
    return value as Partial<T>;
  };
  const prometheus = section<{ registry: Registry; prefix: string }>('prometheus');
  if (prometheus) {
    const { registry, prefix = METRICS_DEFAULTS.prometheusPrefix } = prometheus;
    if (registry !== undefined && (registry === null || typeof (registry as Registry).getSingleMetric !== 'function')) {
      throw invalid('prometheus.registry', registry, "Pass a prom-client Registry (new Registry(), or prom-client's register), or leave it out for the default registry.");
    }
    if (typeof prefix !== 'string' || !PROMETHEUS_PREFIX.test(prefix)) {
      throw invalid('prometheus.prefix', prefix, "Use '' or letters, digits, _ and :, not starting with a digit, e.g. 'myapp_deferred_'.");
    }
    resolved.prometheus = { registry, prefix };
  }
  const opentelemetry = section<{ meter: Meter; prefix: string }>('opentelemetry');
  if (opentelemetry) {
    const { meter, prefix = METRICS_DEFAULTS.openTelemetryPrefix } = opentelemetry;
    if (meter !== undefined && (meter === null || typeof (meter as Meter).createObservableCounter !== 'function')) {
      throw invalid('opentelemetry.meter', meter, "Pass an OpenTelemetry Meter (metrics.getMeter('my-app') of @opentelemetry/api), or leave it out for the global meter provider's.");
    }
    if (typeof prefix !== 'string' || !OTEL_PREFIX.test(prefix)) {
      throw invalid('opentelemetry.prefix', prefix, "Use '' or a name start: a letter, then letters, digits, _ . - or /, e.g. 'myapp.deferred.'.");
    }
    resolved.opentelemetry = { meter, prefix };
  }
  if (!resolved.prometheus && !resolved.opentelemetry) {
    throw new TypeError(
      'DeferredWorkMetricsModule: no exporter chosen. Set "prometheus" (true, or { registry?, prefix? }) and/or "opentelemetry" (true, or { meter?, prefix? }).',
    );
  }
  return resolved;
}
