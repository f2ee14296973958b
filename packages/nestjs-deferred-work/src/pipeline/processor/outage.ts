import type { SinkStats } from '../../core/stats.interface';
import type { Entry } from './entry';
import type { QueueBudget } from './queue-budget';

/**
 * A sink's outage as its processor sees it. The sink is *down* from the first write that delivered
 * nothing and failed transiently until a write delivers something; while down, only the oldest batch
 * is retried (the probe) and the rest wait in order. The outage itself lasts until the backlog held
 * when the sink came back has drained (what readiness reports), even if the sink goes down again
 * meanwhile.
 */
export class Outage {
  /** Since when every write delivered nothing (epoch ms); `undefined` while writes go through. */
  downSince: number | undefined;
  /** Since when the current outage began (epoch ms); kept after the sink came back until its backlog drained. */
  since: number | undefined;
  /** The last seq accepted when the sink came back: the outage ends once every entry up to it settled. */
  private drainTo = 0;

  /** Notes a write's result: `delivered` entries went through, `transient` failed and may be retried. */
  wrote(delivered: number, transient: number, now: number, lastSeq: number): void {
    if (delivered === 0 && transient > 0) {
      this.downSince ??= now;
      this.since ??= now;
    } else if (delivered > 0 && this.downSince !== undefined) {
      this.downSince = undefined;
      this.drainTo = lastSeq;
    }
  }

  /** Ends the outage once the oldest entry still pending was accepted after the sink came back. */
  settled(oldestPendingSeq: number): void {
    if (this.since !== undefined && this.downSince === undefined && oldestPendingSeq > this.drainTo) this.since = undefined;
  }

  /**
   * When an entry's retry budget begins, at its first transient failure (`now`): then — or, when the
   * sink is down, when it went down or the entry was accepted, whichever is later.
   */
  retryFrom(entry: Entry, now: number): number {
    if (this.downSince === undefined) return now;
    return Math.min(now, Math.max(this.downSince, entry.since ?? entry.item.createdAt));
  }
}

/** Adds where the sink stands to its stats: its state, the outage, what it holds and whether it refuses items. */
export function addState(stats: SinkStats, outage: Outage, budget: QueueBudget | undefined): SinkStats {
  const refusing = budget?.refusingSince;
  stats.state = refusing !== undefined ? 'refusing' : outage.downSince !== undefined ? 'probing' : outage.since !== undefined ? 'draining' : 'up';
  if (outage.since !== undefined) stats.outageSince = outage.since;
  if (budget) stats.heldBytes = budget.bytes;
  if (refusing !== undefined) stats.refusingSince = refusing;
  return stats;
}
