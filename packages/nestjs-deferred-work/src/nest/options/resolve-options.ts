import type { SinkTarget } from '../../core/items/deferred-item.interface';
import { anyHandleInUse } from '../handles/handle-tokens';
import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';
import type { DeferredKind, SinkKind } from '../../core/items/deferred-item.interface';
import { DEFERRED_KINDS, RUN_WHENS, SINK_KINDS, WHEN_DEFAULTS, isDeferredKind, isRunWhen, isSinkKind } from '../../core/items/item-kinds';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import { CALLBACK_RUNNER_NAME as CALLBACK_SINK_NAME } from '../../pipeline/callbacks/callback-runner';
import { PROCESSOR_DEFAULTS, TOTAL_QUEUE_BYTES_DEFAULT } from '../../pipeline/defaults';
import type { ResolvedDeferredWorkOptions } from '../../pipeline/resolved-options.interface';
import { MemorySink } from '../../sinks/memory/memory.sink';
import { resolveCorrelation } from './resolve-correlation';
import { MODULE_DEFAULTS } from './module.defaults';
import type { DeferredWorkModuleOptions } from './module-options.interface';
import { checkNumber, checkProcessorOptions, checkSinkName, checkSinkTakes, pickProcessorOptions, targetNames } from './option-checks';
import { resolveCallbackOptions } from './resolve-callback-options';
import { resolveSpools } from './resolve-spools';
import { resolveDeadLetters } from './resolve-dead-letters';

/**
 * Applies every default and validates the options. Throws `DeferredWorkConfigError`, naming the
 * option and the fix, on the first problem found.
 */
export function resolveOptions(options: DeferredWorkModuleOptions = {}): ResolvedDeferredWorkOptions {
  checkProcessorOptions('', options);
  checkNumber('shutdownTimeoutMs', options.shutdownTimeoutMs, 0);
  checkNumber('maxItemBytes', options.maxItemBytes, 1);
  checkNumber('maxTotalQueueBytes', options.maxTotalQueueBytes, 1);
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
    if (key !== 'default' && !isSinkKind(key)) {
      throw new DeferredWorkConfigError(
        `routing.${key}`,
        `"${key}" is not a kind of item`,
        'Route "job", "log", "metric" or "default".',
      );
    }
    for (const name of targetNames(`routing.${key}`, routingIn[key as keyof typeof routingIn])) checkSinkName(`routing.${key}`, name, sinks);
  }
  const routing = {} as Record<SinkKind, SinkTarget>;
  for (const kind of SINK_KINDS) {
    const chosen = routingIn[kind] ?? routingIn.default;
    if (chosen !== undefined) {
      // Routed on purpose: a sink that does not take the kind is a mistake, caught now.
      for (const name of targetNames('routing', chosen)) checkSinkTakes(routingIn[kind] ? `routing.${kind}` : 'routing.default', kind, name, sinks);
      routing[kind] = typeof chosen === 'string' || chosen.length > 1 ? chosen : chosen[0];
    } else {
      // Not routed: the first sink that takes the kind (or the first sink, which then rejects such items, counted).
      routing[kind] = [...sinks.values()].find((sink) => !sink.kinds || sink.kinds.includes(kind))?.name ?? first;
    }
  }

  const when = { ...WHEN_DEFAULTS };
  for (const [kind, value] of Object.entries(options.when ?? {})) {
    if (!isDeferredKind(kind)) {
      throw new DeferredWorkConfigError(`when.${kind}`, `"${kind}" is not a kind of item`, `Use one of ${DEFERRED_KINDS.join(', ')}.`);
    }
    if (!isRunWhen(value)) {
      throw new DeferredWorkConfigError(`when.${kind}`, `"${String(value)}" is not a condition`, `Use one of ${RUN_WHENS.join(', ')}.`);
    }
    when[kind as DeferredKind] = value;
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

  const maxItemBytes = options.maxItemBytes ?? MODULE_DEFAULTS.maxItemBytes;
  const spools = resolveSpools(options, sinks, processorOptions, maxItemBytes);

  return {
    sinks,
    routing,
    processorOptions,
    spools,
    callbacks: resolveCallbackOptions(options),
    when,
    asyncContext: resolveAsyncContext(options.asyncContext ?? MODULE_DEFAULTS.asyncContext),
    timing: options.timing ?? MODULE_DEFAULTS.timing,
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? MODULE_DEFAULTS.shutdownTimeoutMs,
    drainOnSignal: resolveDrainOnSignal(options.drainOnSignal),
    maxItemBytes,
    maxTotalQueueBytes: options.maxTotalQueueBytes ?? TOTAL_QUEUE_BYTES_DEFAULT,
    ...resolveDeadLetters(options, sinks, maxItemBytes),
    deadLetterCapacity: options.deadLetterCapacity ?? MODULE_DEFAULTS.deadLetterCapacity,
    correlation: resolveCorrelation(options.correlation),
  };
}

/** `drainOnSignal`: a boolean, `true` when left out. */
function resolveDrainOnSignal(value: unknown): boolean {
  if (value === undefined) return MODULE_DEFAULTS.drainOnSignal;
  if (typeof value !== 'boolean') {
    throw new DeferredWorkConfigError(
      'drainOnSignal',
      `must be true or false, got ${JSON.stringify(value) ?? String(value)}`,
      'Leave it out (or pass true) to drain on a SIGTERM or SIGINT nothing else handles; pass false to leave the signal to Node.',
    );
  }
  return value;
}

/** `'auto'`: on when an injected deferred handle is in use (they find their request through it). */
function resolveAsyncContext(value: boolean | 'auto'): boolean {
  if (value === 'auto') return anyHandleInUse();
  if (typeof value !== 'boolean') {
    throw new DeferredWorkConfigError('asyncContext', `must be true, false or 'auto', got ${JSON.stringify(value)}`, "Leave it out for 'auto'.");
  }
  return value;
}
