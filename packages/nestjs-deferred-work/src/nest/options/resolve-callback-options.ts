import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';
import { CALLBACK_RUNNER_NAME as CALLBACK_SINK_NAME } from '../../pipeline/callbacks/callback-runner';
import {
  CALLBACK_RUNNER_DEFAULTS,
  CALLBACK_RUNNER_MINIMUMS,
  type CallbackRunnerOptions,
} from '../../pipeline/callbacks/callback-runner.options';
import type { DeferredWorkModuleOptions } from './module-options.interface';
import { checkNumber } from './option-checks';

/**
 * The callback runner's settings: `callbacks`, over the older `sinkOptions.callbacks` (still read:
 * `maxQueueSize`, `maxAttempts`, the backoffs, and `writeTimeoutMs` as `timeoutMs`), over the defaults.
 */
export function resolveCallbackOptions(options: DeferredWorkModuleOptions): CallbackRunnerOptions {
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
