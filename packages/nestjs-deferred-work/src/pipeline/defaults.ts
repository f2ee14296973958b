import type { DeferredKind, RunWhen } from '../items/deferred-item.interface';
import type { SinkProcessorOptions } from '../sinks/deferred-sink.interface';

/** Dispatcher defaults (documented on `SinkProcessorOptions`). */
export const PROCESSOR_DEFAULTS: Readonly<SinkProcessorOptions> = Object.freeze({
  maxQueueSize: 2048,
  maxBatchSize: 512,
  flushIntervalMs: 5,
  writeTimeoutMs: 5000,
  maxAttempts: 5,
  initialBackoffMs: 100,
  maxBackoffMs: 5000,
  maxRetryAfterMs: 60_000,
});

/** Default `when` per kind. */
export const WHEN_DEFAULTS: Readonly<Record<DeferredKind, RunWhen>> = Object.freeze({
  job: 'success',
  callback: 'success',
  log: 'always',
  metric: 'always',
});

export const MODULE_DEFAULTS = Object.freeze({
  asyncContext: false,
  timing: false,
  shutdownTimeoutMs: 5000,
  maxItemBytes: 1_048_576,
  deadLetterCapacity: 100,
});
