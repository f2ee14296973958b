import type { DeferredStats } from '../core/stats.interface';
import { CALLBACK_RUNNER_NAME } from '../pipeline/callbacks/callback-runner';
import type { Dispatcher } from '../pipeline/dispatcher';
import type { KindCounts } from '../pipeline/processor/sink-counters';

/** What the observed metrics are read from: one snapshot of the library's state. */
export interface SelfMetricsSnapshot {
  stats: DeferredStats;
  /** Counts by sink, then item kind. */
  kinds: Record<string, Record<string, KindCounts>>;
  /** Each sink's `maxQueueSize`, when set (the callback runner's as `callbacks`). */
  capacity: Record<string, number>;
  /** Each sink's `maxQueueBytes`. */
  byteCapacity: Record<string, number>;
}

/**
 * Takes one snapshot per collection: every metric read in the same turn (a scrape, an OpenTelemetry
 * collection) sees the same state, and the next collection a fresh one.
 */
export class SnapshotSource {
  private current: SelfMetricsSnapshot | undefined;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly stats: () => DeferredStats,
  ) {}

  read(): SelfMetricsSnapshot {
    if (this.current) return this.current;
    const capacity: Record<string, number> = { [CALLBACK_RUNNER_NAME]: this.dispatcher.options.callbacks.maxQueueSize };
    const byteCapacity: Record<string, number> = {};
    for (const [sink, options] of this.dispatcher.options.processorOptions) {
      if (Number.isFinite(options.maxQueueSize)) capacity[sink] = options.maxQueueSize;
      byteCapacity[sink] = options.maxQueueBytes;
    }
    this.current = { stats: this.stats(), kinds: this.dispatcher.kindCounts(), capacity, byteCapacity };
    setImmediate(() => (this.current = undefined));
    return this.current;
  }
}
