import type { SinkTarget } from '../../core/items/deferred-item.interface';
import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';
import { MAX_TIMER_MS } from '../../core/timers';
import type { SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import { CALLBACK_RUNNER_NAME as CALLBACK_SINK_NAME } from '../../pipeline/callbacks/callback-runner';


/** Smallest value of each numeric dispatcher option (options ending in `Ms` are capped at `MAX_TIMER_MS`). */
const NUMERIC: Record<keyof SinkProcessorOptions, number> = {
  maxQueueSize: 1,
  maxQueueBytes: 1,
  maxBatchSize: 1,
  flushIntervalMs: 0,
  writeTimeoutMs: 1,
  maxRetryDurationMs: 0,
  maxAttempts: 1,
  initialBackoffMs: 0,
  maxBackoffMs: 0,
  maxRetryAfterMs: 0,
};

export function checkNumber(option: string, value: unknown, min: number): void {
  if (value === undefined) return;
  const max = option.endsWith('Ms') ? MAX_TIMER_MS : Number.MAX_SAFE_INTEGER;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === MAX_TIMER_MS ? `between ${min} and ${MAX_TIMER_MS} (the longest a timer can wait)` : `>= ${min}`;
    throw new DeferredWorkConfigError(
      option,
      `expected a whole number ${range}, got ${typeof value === 'number' ? value : JSON.stringify(value) ?? String(value)}`,
      'Pass a whole number, or leave the option out to use its default.',
    );
  }
}

export function checkProcessorOptions(prefix: string, options: Partial<SinkProcessorOptions> | undefined): void {
  if (!options) return;
  for (const key of Object.keys(NUMERIC) as (keyof SinkProcessorOptions)[]) {
    checkNumber(prefix + key, options[key], NUMERIC[key]);
  }
}

export function pickProcessorOptions(source: Partial<SinkProcessorOptions> | undefined): Partial<SinkProcessorOptions> {
  const picked: Partial<SinkProcessorOptions> = {};
  if (!source) return picked;
  for (const key of Object.keys(NUMERIC) as (keyof SinkProcessorOptions)[]) {
    if (source[key] !== undefined) picked[key] = source[key];
  }
  return picked;
}

export function checkSinkName(option: string, name: string | undefined, sinks: ReadonlyMap<string, DeferredSink>): void {
  if (name === CALLBACK_SINK_NAME) {
    throw new DeferredWorkConfigError(
      option,
      `"${CALLBACK_SINK_NAME}" is the built-in runner of run(fn) callbacks and takes nothing else`,
      'Route to one of your sinks.',
    );
  }
  if (name === undefined || sinks.has(name)) return;
  const known = [...sinks.keys()].filter((n) => n !== CALLBACK_SINK_NAME);
  throw new DeferredWorkConfigError(
    option,
    `no sink is named "${name}" (configured: ${known.map((n) => `"${n}"`).join(', ') || 'none'})`,
    `Add a sink with name "${name}" to "sinks", or route to one of the configured sinks.`,
  );
}

/**
 * A sink that declares the kinds it takes (`DeferredSink.kinds`) must not be routed another kind:
 * caught here at bootstrap rather than dead-lettering every such item at run time.
 */
export function checkSinkTakes(option: string, kind: SinkKind, name: string, sinks: ReadonlyMap<string, DeferredSink>): void {
  const kinds = sinks.get(name)?.kinds;
  if (!kinds || kinds.includes(kind)) return;
  const others = [...sinks.values()].filter((s) => !s.kinds || s.kinds.includes(kind)).map((s) => `"${s.name}"`);
  throw new DeferredWorkConfigError(
    option,
    `${kind} items would go to sink "${name}", which takes only ${kinds.join(', ')} items`,
    others.length > 0
      ? `Route ${kind} items to a sink that takes them (${others.join(', ')}), e.g. routing: { ${kinds[0]}: '${name}', default: ${others[0].replace(/"/g, "'")} }.`
      : `Add a sink that takes ${kind} items (a MemorySink, an HttpSink) and route ${kind} items to it.`,
  );
}

/** The sink names of a target (one name, or several for fan-out); a malformed one fails with the fix. */
export function targetNames(option: string, target: SinkTarget | undefined): readonly string[] {
  if (target === undefined) return [];
  if (typeof target === 'string') return [target];
  if (!Array.isArray(target) || target.length === 0 || target.some((name) => typeof name !== 'string')) {
    throw new DeferredWorkConfigError(option, `must be a sink's name or a non-empty array of names, got ${JSON.stringify(target)}`, "E.g. 'prometheus', or ['prometheus', 'opentelemetry'] for a copy to each.");
  }
  if (new Set(target).size !== target.length) {
    throw new DeferredWorkConfigError(option, `names a sink twice (${JSON.stringify(target)})`, 'List each sink once.');
  }
  return target;
}
