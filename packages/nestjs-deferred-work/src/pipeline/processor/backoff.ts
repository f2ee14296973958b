import type { SinkProcessorOptions } from '../../core/sink.interface';

/**
 * Delay before retry number `retry` (1 for the first retry): exponential with full jitter,
 * never less than what the sink asked for (`retryAfterMs`, itself capped by `maxRetryAfterMs`).
 */
export function retryDelayMs(
  retry: number,
  options: Pick<SinkProcessorOptions, 'initialBackoffMs' | 'maxBackoffMs' | 'maxRetryAfterMs'>,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** Math.max(0, retry - 1));
  const jittered = Math.round(ceiling * random());
  if (retryAfterMs === undefined || !(retryAfterMs > 0)) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, options.maxRetryAfterMs));
}
