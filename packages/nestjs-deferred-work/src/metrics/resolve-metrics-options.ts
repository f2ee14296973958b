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
  const prometheus = exporterOptions(options, 'prometheus', {
    target: 'registry',
    method: 'getSingleMetric',
    targetFix: "Pass a prom-client Registry (new Registry(), or prom-client's register), or leave it out for the default registry.",
    prefix: PROMETHEUS_PREFIX,
    defaultPrefix: METRICS_DEFAULTS.prometheusPrefix,
    prefixFix: "Use '' or letters, digits, _ and :, not starting with a digit, e.g. 'myapp_deferred_'.",
  });
  if (prometheus) resolved.prometheus = { registry: prometheus.target as Registry | undefined, prefix: prometheus.prefix };
  const opentelemetry = exporterOptions(options, 'opentelemetry', {
    target: 'meter',
    method: 'createObservableCounter',
    targetFix: "Pass an OpenTelemetry Meter (metrics.getMeter('my-app') of @opentelemetry/api), or leave it out for the global meter provider's.",
    prefix: OTEL_PREFIX,
    defaultPrefix: METRICS_DEFAULTS.openTelemetryPrefix,
    prefixFix: "Use '' or a name start: a letter, then letters, digits, _ . - or /, e.g. 'myapp.deferred.'.",
  });
  if (opentelemetry) resolved.opentelemetry = { meter: opentelemetry.target as Meter | undefined, prefix: opentelemetry.prefix };
  if (!resolved.prometheus && !resolved.opentelemetry) {
    throw new TypeError(
      'DeferredWorkMetricsModule: no exporter chosen. Set "prometheus" (true, or { registry?, prefix? }) and/or "opentelemetry" (true, or { meter?, prefix? }).',
    );
  }
  return resolved;
}

/** How one exporter's options are checked: its target object (registry, meter) and its prefix. */
interface ExporterSpec {
  target: 'registry' | 'meter';
  /** A method the target must have. */
  method: string;
  targetFix: string;
  prefix: RegExp;
  defaultPrefix: string;
  prefixFix: string;
}

/** One exporter's options (`true`: the defaults; `false` or absent: off), checked. */
function exporterOptions(options: DeferredWorkMetricsOptions, name: 'prometheus' | 'opentelemetry', spec: ExporterSpec): { target: unknown; prefix: string } | undefined {
  const value = options[name];
  if (value === undefined || value === false) return undefined;
  if (value !== true && (value === null || typeof value !== 'object')) {
    throw invalid(name, value, 'Use true for the defaults, or an object (see DeferredWorkMetricsOptions).');
  }
  const given = (value === true ? {} : value) as Record<string, unknown>;
  const target = given[spec.target];
  if (target !== undefined && (target === null || typeof (target as Record<string, unknown>)[spec.method] !== 'function')) {
    throw invalid(`${name}.${spec.target}`, target, spec.targetFix);
  }
  const prefix = given.prefix ?? spec.defaultPrefix;
  if (typeof prefix !== 'string' || !spec.prefix.test(prefix)) throw invalid(`${name}.prefix`, prefix, spec.prefixFix);
  return { target, prefix };
}
