import type { SinkProcessorOptions } from '../core/sink.interface';

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
