import type { DeadLetteredReason, DropReason, ItemCounts, SinkStats } from '../../core/stats.interface';

/** A sink's counters for one item kind (no `pending`: only the sink's total has it). */
export type KindCounts = Omit<ItemCounts, 'pending'>;

/**
 * The counters of one sink (or of the callback runner), and the snapshot `stats()` shows. The
 * owner keeps `accepted = delivered + pending + dropped + deadLettered` true by changing them in
 * the same synchronous step as its own queues.
 */
export class SinkCounters {
  accepted = 0;
  delivered = 0;
  dropped = 0;
  deadLettered = 0;
  retried = 0;
  duplicates = 0;
  writes = 0;
  failedWrites = 0;
  lastError: string | undefined;
  lastErrorAt: number | undefined;
  lastErrorCode: string | undefined;
  lastWriteMs: number | undefined;
  lastDropAt: number | undefined;
  lastDeadLetterAt: number | undefined;
  redriven = 0;
  /** `deadLettered` by reason (the reasons seen). */
  readonly deadLetteredByReason: Partial<Record<DeadLetteredReason, number>> = {};
  /** Since when every write failed (epoch ms), until one goes through completely. */
  failingSince: number | undefined;
  /** When the write in flight started (epoch ms), if one is. */
  writeStartedAt: number | undefined;
  /** When a write last started or ended (epoch ms). */
  lastProgressAt: number | undefined;
  /** Writes given up on that ignored their abort signal and have not settled: their start (epoch ms). */
  private readonly unsettled = new Set<{ since: number }>();
  /**
   * The same counts by item kind, for the kinds seen. Their sums equal the totals, except for items a
   * spool replays from a previous process (counted by kind once read back from disk) and spooled items
   * that could not be read back.
   */
  readonly byKind = new Map<string, KindCounts>();

  /** The counts of one kind (created at its first item). */
  kind(kind: string): KindCounts {
    let counts = this.byKind.get(kind);
    if (!counts) this.byKind.set(kind, (counts = { accepted: 0, delivered: 0, dropped: 0, deadLettered: 0, retried: 0 }));
    return counts;
  }

  /** `dropped` by reason (the reasons seen). */
  readonly droppedByReason: Partial<Record<DropReason, number>> = {};

  drop(kind: string, reason: DropReason): void {
    this.kind(kind).dropped++;
    this.dropped++;
    this.droppedByReason[reason] = (this.droppedByReason[reason] ?? 0) + 1;
    this.lastDropAt = Date.now();
  }

  writeStarted(): void {
    this.writes++;
    this.writeStartedAt = this.lastProgressAt = Date.now();
  }

  writeEnded(): void {
    this.writeStartedAt = undefined;
    this.lastProgressAt = Date.now();
  }

  /**
   * The write in flight was given up on after its timeout and abort grace and is still pending;
   * counted (from the write's start) until `settled` settles.
   */
  abandoned(settled: Promise<unknown>): void {
    const write = { since: this.writeStartedAt ?? Date.now() };
    this.unsettled.add(write);
    void settled.then(() => this.unsettled.delete(write));
  }

  /** A write went through completely: the sink is not failing any more. */
  succeeded(): void {
    this.failingSince = undefined;
  }

  failedWrite(summary: string, code?: string): void {
    this.failedWrites++;
    this.lastError = summary;
    this.lastErrorAt = Date.now();
    this.failingSince ??= this.lastErrorAt;
    this.lastErrorCode = code;
  }

  /** Counts `count` dead letters of `reason`; returns the time to stamp them with. */
  buried(count: number, reason: DeadLetteredReason): number {
    const at = Date.now();
    this.deadLettered += count;
    this.deadLetteredByReason[reason] = (this.deadLetteredByReason[reason] ?? 0) + count;
    this.lastDeadLetterAt = at;
    return at;
  }

  private unsettledStats(): Pick<SinkStats, 'unsettledWrites' | 'unsettledWriteSince'> {
    if (this.unsettled.size === 0) return {};
    let since = Infinity;
    for (const write of this.unsettled) since = Math.min(since, write.since);
    return { unsettledWrites: this.unsettled.size, unsettledWriteSince: Math.round(since) };
  }

  snapshot(pending: number, queueDepth: number, inFlight: number): SinkStats {
    return {
      accepted: this.accepted,
      delivered: this.delivered,
      pending,
      dropped: this.dropped,
      deadLettered: this.deadLettered,
      retried: this.retried,
      duplicates: this.duplicates,
      queueDepth,
      inFlight,
      writes: this.writes,
      failedWrites: this.failedWrites,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastErrorCode: this.lastErrorCode,
      lastWriteMs: this.lastWriteMs,
      lastDropAt: this.lastDropAt,
      lastDeadLetterAt: this.lastDeadLetterAt,
      deadLetteredByReason: { ...this.deadLetteredByReason },
      droppedByReason: { ...this.droppedByReason },
      redriven: this.redriven,
      failingSince: this.failingSince,
      writeInFlightSince: this.writeStartedAt,
      ...this.unsettledStats(),
      lastProgressAt: this.lastProgressAt,
    };
  }
}

/** A copy of the counts by kind, as plain objects. */
export function kindCountsOf(counters: SinkCounters): Record<string, KindCounts> {
  const out: Record<string, KindCounts> = {};
  for (const [kind, counts] of counters.byKind) out[kind] = { ...counts };
  return out;
}
