import type { Entry } from './entry';

/**
 * The bytes held in memory over every sink, bounded by the module's `maxTotalQueueBytes`: one per
 * dispatcher, shared by its processors.
 */
export class TotalQueueBytes {
  held = 0;
  constructor(readonly max: number) {}
}

/** Why an entry does not fit: the sink's count cap, its byte budget, or the module-wide one. */
export type QueueLimit = 'maxQueueSize' | 'maxQueueBytes' | 'maxTotalQueueBytes';

/**
 * One sink's budget for what it holds in memory (queued, in flight, waiting for a retry): bytes
 * (`maxQueueBytes`, and the module-wide `maxTotalQueueBytes`) and, when set, a count (`maxQueueSize`).
 * Counting is per entry and idempotent (`Entry.counted`), so an entry released twice counts once.
 */
export class QueueBudget {
  /** Bytes of the entries held now. */
  bytes = 0;
  /** Since when items are refused for want of room (epoch ms); cleared once the sink is below 90% again. */
  refusingSince: number | undefined;
  /** The limit that refused the last item. */
  refusedBy: QueueLimit | undefined;

  constructor(
    readonly maxBytes: number,
    readonly maxCount: number,
    private readonly total: TotalQueueBytes,
  ) {}

  /** Whether an entry of `bytes` fits beside `count` entries held; when not, notes the refusal. */
  fits(bytes: number, count: number): boolean {
    const limit =
      count >= this.maxCount ? 'maxQueueSize' : this.bytes + bytes > this.maxBytes && count > 0 ? 'maxQueueBytes' : this.total.held + bytes > this.total.max && count > 0 ? 'maxTotalQueueBytes' : undefined;
    if (limit === undefined) return true;
    this.refusedBy = limit;
    this.refusingSince ??= Date.now();
    return false;
  }

  /** Whether one more item would be taken beside `count` held, without noting a refusal (a redrive asks). */
  hasRoom(count: number): boolean {
    return count < this.maxCount && (count === 0 || (this.bytes < this.maxBytes && this.total.held < this.total.max));
  }

  /** What refused the last item dropped for want of room, with what the sink holds (`count` items). */
  refusal(count: number): { limit: QueueLimit; bytes: number; held: number } | undefined {
    return this.refusedBy === undefined ? undefined : { limit: this.refusedBy, bytes: this.bytes, held: count };
  }

  /** Counts an entry as held in memory (once). */
  hold(entry: Entry): void {
    if (entry.counted) return;
    entry.counted = true;
    this.bytes += entry.bytes;
    this.total.held += entry.bytes;
  }

  /** Counts entries as no longer held (each once); ends a refusal once below 90% of every limit. */
  release(entries: Iterable<Entry>, count: number): void {
    for (const entry of entries) {
      if (!entry.counted) continue;
      entry.counted = false;
      this.bytes -= entry.bytes;
      this.total.held -= entry.bytes;
    }
    if (this.refusingSince !== undefined && this.bytes < this.maxBytes * 0.9 && this.total.held < this.total.max * 0.9 && count < this.maxCount * 0.9) {
      this.refusingSince = undefined;
    }
  }
}
