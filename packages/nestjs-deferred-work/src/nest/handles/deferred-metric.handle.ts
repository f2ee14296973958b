import type { DeferredScope } from '../../capture/deferred-scope.interface';

/** Label values, as prom-client takes them. */
export type MetricLabels = Record<string, string | number>;

/** How a metric is declared in a metrics sink (type and label names), when a sink knows it. */
export type MetricDeclarationLookup = (name: string) => { type: string; labelNames: readonly string[] } | undefined;

/** The calls of a metric bound to a label set (`labels(…)`). */
export interface DeferredMetricLabelled {
  inc(value?: number): void;
  dec(value?: number): void;
  set(value: number): void;
  observe(value: number): void;
  /** Starts a timer; the function it returns observes the seconds since, and returns them. */
  startTimer(labels?: MetricLabels): (labels?: MetricLabels) => number;
}

/**
 * A metric handle with prom-client's calls — what `@InjectMetric()` of `@willsoto/nestjs-prometheus`
 * gives (`Counter`, `Gauge`, `Histogram`, `Summary`) — whose points are deferred (after the response,
 * on a decorated route) to the metrics sinks the routing names (several, with fan-out routing).
 */
export interface DeferredMetricHandle extends DeferredMetricLabelled {
  /** `inc()`, `inc(2)`, `inc({ channel: 'web' })`, `inc({ channel: 'web' }, 2)`. */
  inc(labelsOrValue?: MetricLabels | number, value?: number): void;
  /** For gauges (and up-down counters): subtracts. */
  dec(labelsOrValue?: MetricLabels | number, value?: number): void;
  /** For gauges: the current value. */
  set(labelsOrValue: MetricLabels | number, value?: number): void;
  /** For histograms and summaries: one observation. */
  observe(labelsOrValue: MetricLabels | number, value?: number): void;
  /** `labels('web', 'EU')` (in the declared order of label names) or `labels({ channel: 'web' })`. */
  labels(...values: Array<string | number> | [MetricLabels]): DeferredMetricLabelled;
  /** The metric's name, as given. */
  readonly name: string;
}

/** Label values as item tags (strings). */
function toTags(labels: MetricLabels | undefined): Record<string, string> | undefined {
  if (!labels) return undefined;
  const tags: Record<string, string> = {};
  for (const key in labels) tags[key] = String(labels[key]);
  return tags;
}

/** Builds the handle of metric `name`, deferring through `scope()`; `declaration` tells gauges apart and orders positional labels. */
export function deferredMetric(name: string, scope: () => DeferredScope, declaration: MetricDeclarationLookup): DeferredMetricHandle {
  const emit = (labels: MetricLabels | undefined, value: number, add: boolean) => {
    // On a gauge, inc() and dec() add to it; every other instrument applies a value by its type.
    const gauge = add && declaration(name)?.type === 'gauge';
    scope().metric(name, value, toTags(labels), gauge ? { op: 'add' } : undefined);
  };
  const split = (a: MetricLabels | number | undefined, b: number | undefined, fallback: number | undefined) =>
    typeof a === 'object' && a !== null ? { labels: a, value: b ?? fallback } : { labels: undefined, value: (a as number | undefined) ?? fallback };
  const bound = (fixed: MetricLabels | undefined): DeferredMetricLabelled => ({
    inc: (value = 1) => emit(fixed, value, true),
    dec: (value = 1) => emit(fixed, -value, true),
    set: (value) => emit(fixed, value, false),
    observe: (value) => emit(fixed, value, false),
    startTimer: (labels) => {
      const started = performance.now();
      return (more) => {
        const seconds = (performance.now() - started) / 1000;
        emit({ ...fixed, ...labels, ...more }, seconds, false);
        return seconds;
      };
    },
  });
  const unlabelled = bound(undefined);
  return {
    name,
    inc(a, b) {
      const { labels, value } = split(a, b, 1);
      emit(labels, value!, true);
    },
    dec(a, b) {
      const { labels, value } = split(a, b, 1);
      emit(labels, -value!, true);
    },
    set(a, b) {
      const { labels, value } = split(a, b, undefined);
      emit(labels, value as number, false);
    },
    observe(a, b) {
      const { labels, value } = split(a, b, undefined);
      emit(labels, value as number, false);
    },
    startTimer: unlabelled.startTimer,
    labels(...values) {
      if (values.length === 1 && typeof values[0] === 'object' && values[0] !== null) return bound(values[0] as MetricLabels);
      const names = declaration(name)?.labelNames;
      if (!names) {
        throw new TypeError(
          `metric "${name}": labels(${values.map((v) => JSON.stringify(v)).join(', ')}) needs the order of its label names, and no metrics sink declares "${name}". ` +
            'Pass the labels as an object (labels({ channel: "web" })), or declare the metric in a metrics sink.',
        );
      }
      const labels: MetricLabels = {};
      values.forEach((value, i) => {
        if (i < names.length) labels[names[i]] = value as string | number;
      });
      return bound(labels);
    },
  };
}

/** OpenTelemetry attributes as item tags (strings; arrays joined). */
function attributeTags(attributes: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (!attributes) return undefined;
  const tags: Record<string, string> = {};
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined) tags[key] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return tags;
}

/** An OpenTelemetry counter or up-down counter whose additions are deferred. */
export interface DeferredAdder {
  add(value: number, attributes?: Record<string, unknown>): void;
}

/** An OpenTelemetry histogram or gauge whose records are deferred. */
export interface DeferredRecorder {
  record(value: number, attributes?: Record<string, unknown>): void;
}

/** The OpenTelemetry instrument calls, deferred through `scope()`. */
export function deferredAdder(name: string, scope: () => DeferredScope): DeferredAdder {
  return { add: (value, attributes) => void scope().metric(name, value, attributeTags(attributes)) };
}

export function deferredRecorder(name: string, scope: () => DeferredScope): DeferredRecorder {
  return { record: (value, attributes) => void scope().metric(name, value, attributeTags(attributes)) };
}
