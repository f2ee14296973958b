import type { SinkProcessorOptions } from '../core/sink.interface';

/** Dispatcher defaults (documented on `SinkProcessorOptions`). No count cap and no attempts cap: the byte budget and the time budget bound them. */
export const PROCESSOR_DEFAULTS: Readonly<SinkProcessorOptions> = Object.freeze({
  maxQueueSize: Number.POSITIVE_INFINITY,
  maxQueueBytes: 32 * 1024 * 1024,
  maxBatchSize: 512,
  flushIntervalMs: 5,
  writeTimeoutMs: 5000,
  maxRetryDurationMs: 300_000,
  maxAttempts: Number.POSITIVE_INFINITY,
  initialBackoffMs: 100,
  maxBackoffMs: 5000,
  maxRetryAfterMs: 60_000,
});

/** Default of the module's `maxTotalQueueBytes`: the bytes held in memory over every sink. */
export const TOTAL_QUEUE_BYTES_DEFAULT = 128 * 1024 * 1024;

/** Bytes an item counts for its fields (kind, names, id, times), on top of its payload's serialised size. */
export const ITEM_OVERHEAD_BYTES = 256;
