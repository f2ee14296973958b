import { DeferredWorkConfigError } from '../errors/deferred-work-config.error';
import type { DeferredKind, RunWhen, SinkKind } from '../items/deferred-item.interface';
import { CALLBACK_RUNNER_NAME as CALLBACK_SINK_NAME } from '../dispatch/callback-runner';
import {
  CALLBACK_RUNNER_DEFAULTS,
  CALLBACK_RUNNER_MINIMUMS,
  type CallbackRunnerOptions,
} from '../dispatch/callback-runner.options';
import type { DeferredSink, SinkProcessorOptions } from '../sinks/deferred-sink.interface';
import { MemorySink } from '../sinks/memory.sink';
import { MODULE_DEFAULTS, PROCESSOR_DEFAULTS, WHEN_DEFAULTS } from './defaults';
import type { DeferredWorkModuleOptions, ResolvedDeferredWorkOptions } from './module-options.interface';

const SINK_KINDS: readonly SinkKind[] = ['job', 'log', 'metric'];
const KINDS: readonly DeferredKind[] = ['job', 'log', 'metric', 'callback'];
const WHENS: readonly RunWhen[] = ['always', 'success', 'failure'];

/** Largest delay a Node.js timer takes; longer ones fire after 1 ms. */
const MAX_MS = 2_147_483_647;

/** Smallest value of each numeric dispatcher option (options ending in `Ms` are capped at `MAX_MS`). */
const NUMERIC: Record<keyof SinkProcessorOptions, number> = {
  maxQueueSize: 1,
  maxBatchSize: 1,
  flushIntervalMs: 0,
  writeTimeoutMs: 1,
  maxAttempts: 1,
  initialBackoffMs: 0,
  maxBackoffMs: 0,
  maxRetryAfterMs: 0,
};

function checkNumber(option: string, value: unknown, min: number): void {
  if (value === undefined) return;
  const max = option.endsWith('Ms') ? MAX_MS : Number.MAX_SAFE_INTEGER;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === MAX_MS ? `between ${min} and ${MAX_MS} (the longest a timer can wait)` : `>= ${min}`;
    throw new DeferredWorkConfigError(
      option,
      `expected a whole number ${range}, got ${typeof value === 'number' ? value : JSON.stringify(value) ?? String(value)}`,
      'Pass a whole number, or leave the option out to use its default.',
    );
  }
}

function checkProcessorOptions(prefix: string, options: Partial<SinkProcessorOptions> | undefined): void {
  if (!options) return;
  for (const key of Object.keys(NUMERIC) as (keyof SinkProcessorOptions)[]) {
    checkNumber(prefix + key, options[key], NUMERIC[key]);
  }
}

function pickProcessorOptions(source: Partial<SinkProcessorOptions> | undefined): Partial<SinkProcessorOptions> {
  const picked: Partial<SinkProcessorOptions> = {};
  if (!source) return picked;
  for (const key of Object.keys(NUMERIC) as (keyof SinkProcessorOptions)[]) {
    if (source[key] !== undefined) picked[key] = source[key];
  }
  return picked;
}

function checkSinkName(option: string, name: string | undefined, sinks: ReadonlyMap<string, DeferredSink>): void {
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
 * Applies every default and validates the options. Throws `DeferredWorkConfigError`, naming the
 * option and the fix, on the first problem found.
 */
export function resolveOptions(options: DeferredWorkModuleOptions = {}): ResolvedDeferredWorkOptions {
  checkProcessorOptions('', options);
  checkNumber('shutdownTimeoutMs', options.shutdownTimeoutMs, 0);
  checkNumber('maxItemBytes', options.maxItemBytes, 1);
  checkNumber('deadLetterCapacity', options.deadLetterCapacity, 0);

  if (options.sinks !== undefined && !Array.isArray(options.sinks)) {
    throw new DeferredWorkConfigError('sinks', 'expected an array of sinks', 'Pass sinks: [new MemorySink(), ...].');
  }
  const configured = options.sinks && options.sinks.length > 0 ? options.sinks : [new MemorySink()];
  const sinks = new Map<string, DeferredSink>();
  configured.forEach((sink, index) => {
    if (!sink || typeof sink.name !== 'string' || sink.name === '' || typeof sink.write !== 'function') {
      throw new DeferredWorkConfigError(
        `sinks[${index}]`,
        'not a sink (a sink has a non-empty string "name" and a "write(batch, { signal })" method)',
        'Pass an instance of MemorySink, HttpSink, BullSink or your own class implementing DeferredSink.',
      );
    }
    if (sink.name === CALLBACK_SINK_NAME) {
      throw new DeferredWorkConfigError(
        `sinks[${index}].name`,
        `"${CALLBACK_SINK_NAME}" is reserved for the built-in runner of run(fn) callbacks`,
        'Give the sink another name.',
      );
    }
    if (sinks.has(sink.name)) {
      throw new DeferredWorkConfigError(
        `sinks[${index}].name`,
        `two sinks are named "${sink.name}"`,
        'Give each sink a unique name (most sinks take a "name" option).',
      );
    }
    sinks.set(sink.name, sink);
  });
  const first = configured[0].name;

  const routingIn = options.routing ?? {};
  for (const key of Object.keys(routingIn)) {
    if (key !== 'default' && !SINK_KINDS.includes(key as SinkKind)) {
      throw new DeferredWorkConfigError(
        `routing.${key}`,
        `"${key}" is not a kind of item`,
        'Route "job", "log", "metric" or "default".',
      );
    }
    checkSinkName(`routing.${key}`, routingIn[key as keyof typeof routingIn], sinks);
  }
  const fallback = routingIn.default ?? first;
  const routing = {} as Record<SinkKind, string>;
  for (const kind of SINK_KINDS) routing[kind] = routingIn[kind] ?? fallback;

  const when = { ...WHEN_DEFAULTS };
  for (const [kind, value] of Object.entries(options.when ?? {})) {
    if (!KINDS.includes(kind as DeferredKind)) {
      throw new DeferredWorkConfigError(`when.${kind}`, `"${kind}" is not a kind of item`, `Use one of ${KINDS.join(', ')}.`);
    }
    if (!WHENS.includes(value as RunWhen)) {
      throw new DeferredWorkConfigError(`when.${kind}`, `"${String(value)}" is not a condition`, `Use one of ${WHENS.join(', ')}.`);
    }
    when[kind as DeferredKind] = value as RunWhen;
  }

  const processorOptions = new Map<string, SinkProcessorOptions>();
  for (const [name, perSink] of Object.entries(options.sinkOptions ?? {})) {
    if (name !== CALLBACK_SINK_NAME) checkSinkName(`sinkOptions.${name}`, name, sinks);
    checkProcessorOptions(`sinkOptions.${name}.`, perSink);
  }
  const globals = pickProcessorOptions(options);
  for (const [name, sink] of sinks) {
    const resolved = {
      ...PROCESSOR_DEFAULTS,
      ...globals,
      ...pickProcessorOptions(sink.defaults),
      ...pickProcessorOptions(options.sinkOptions?.[name]),
    };
    if (resolved.maxBatchSize > resolved.maxQueueSize) {
      throw new DeferredWorkConfigError(
        options.sinkOptions?.[name] ? `sinkOptions.${name}.maxBatchSize` : 'maxBatchSize',
        `maxBatchSize (${resolved.maxBatchSize}) is larger than maxQueueSize (${resolved.maxQueueSize}) for sink "${name}"`,
        'Make maxBatchSize at most maxQueueSize.',
      );
    }
    processorOptions.set(name, resolved);
  }

  const deadLetter = options.deadLetter;
  if (typeof deadLetter === 'string') checkSinkName('deadLetter', deadLetter, sinks);
  else if (deadLetter !== undefined && typeof deadLetter !== 'function') {
    throw new DeferredWorkConfigError(
      'deadLetter',
      'expected a function or a sink name',
      'Pass deadLetter: (letters) => { ... } or the name of a configured sink.',
    );
  }

  return {
    sinks,
    routing,
    processorOptions,
    callbacks: resolveCallbackOptions(options),
    when,
    asyncContext: options.asyncContext ?? MODULE_DEFAULTS.asyncContext,
    timing: options.timing ?? MODULE_DEFAULTS.timing,
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? MODULE_DEFAULTS.shutdownTimeoutMs,
    maxItemBytes: options.maxItemBytes ?? MODULE_DEFAULTS.maxItemBytes,
    deadLetter,
    deadLetterCapacity: options.deadLetterCapacity ?? MODULE_DEFAULTS.deadLetterCapacity,
  };
}

/**
 * The callback runner's settings: `callbacks`, over the older `sinkOptions.callbacks` (still read:
 * `maxQueueSize`, `maxAttempts`, the backoffs, and `writeTimeoutMs` as `timeoutMs`), over the defaults.
 */
function resolveCallbackOptions(options: DeferredWorkModuleOptions): CallbackRunnerOptions {
  const own = options.callbacks;
  if (own !== undefined && (own === null || typeof own !== 'object' || Array.isArray(own))) {
    throw new DeferredWorkConfigError('callbacks', 'expected an object', 'Pass callbacks: { concurrency: 2048, timeoutMs: 5000 } or leave it out.');
  }
  for (const key of Object.keys(own ?? {})) {
    if (!(key in CALLBACK_RUNNER_MINIMUMS)) {
      throw new DeferredWorkConfigError(
        `callbacks.${key}`,
        'not an option of the callback runner',
        `Use ${Object.keys(CALLBACK_RUNNER_MINIMUMS).join(', ')}.`,
      );
    }
  }
  const legacy = options.sinkOptions?.[CALLBACK_SINK_NAME] ?? {};
  const resolved: CallbackRunnerOptions = { ...CALLBACK_RUNNER_DEFAULTS };
  const fromLegacy: Partial<CallbackRunnerOptions> = {
    maxQueueSize: legacy.maxQueueSize,
    timeoutMs: legacy.writeTimeoutMs,
    maxAttempts: legacy.maxAttempts,
    initialBackoffMs: legacy.initialBackoffMs,
    maxBackoffMs: legacy.maxBackoffMs,
  };
  for (const key of Object.keys(CALLBACK_RUNNER_MINIMUMS) as (keyof CallbackRunnerOptions)[]) {
    const value = own?.[key] ?? fromLegacy[key];
    checkNumber(own?.[key] !== undefined ? `callbacks.${key}` : `sinkOptions.callbacks`, value, CALLBACK_RUNNER_MINIMUMS[key]);
    if (value !== undefined) resolved[key] = value;
  }
  return resolved;
}
