import type { SinkState } from '../../core/stats.interface';
/** Options of {@link DeferredWorkHealthIndicator.isHealthy} (and the capacity checks of `isReady`). */
export interface DeferredWorkHealthOptions {
  /** A sink holding at least this fraction of its `maxQueueBytes` (or of its `maxQueueSize`, when set) is near full. Default `0.8`. */
  queueFullRatio?: number;
  /** Drops or dead letters within this many ms make the check degraded. Default `60000`. */
  recentMs?: number;
  /** A spooled sink whose oldest pending item is older than this, in ms, is `down`. Default `300000` (5 minutes). */
  spoolMaxAgeMs?: number;
  /** A spooled sink whose spool uses at least this fraction of its `maxBytes` is `down`. Default `0.8`. */
  spoolFullRatio?: number;
}

/** Options of {@link DeferredWorkHealthIndicator.isReady}: the capacity checks, and an outage before anything is dropped. */
export interface DeferredWorkReadinessOptions extends DeferredWorkHealthOptions {
  /**
   * A sink in an outage this long, in ms, is `down` (before anything is dropped): from its first write
   * that delivered nothing, continuously, until the backlog it left has drained — whatever the retry
   * gap. A write in flight this long counts as failing too (one started before the outage only ends at
   * its `writeTimeoutMs`). Default `60000`.
   */
  failingForMs?: number;
  /** A sink without a spool whose oldest pending item is older than this, in ms, is `down`. Default `300000` (5 minutes). */
  pendingMaxAgeMs?: number;
}

/** Options of {@link DeferredWorkHealthIndicator.isLive}: only a wedged pipeline is `down`, never a slow or failing sink. */
export interface DeferredWorkLivenessOptions {
  /**
   * A write still in flight, or given up on and still unsettled (its sink ignores the abort signal),
   * this long past the sink's `writeTimeoutMs`, in ms, is wedged. Default `60000`.
   */
  wedgedWriteMs?: number;
  /**
   * Items held while no write started or ended for this long beyond the sink's longest legitimate wait
   * (`writeTimeoutMs` + the larger of `maxBackoffMs` and `maxRetryAfterMs`; for callbacks, their
   * `timeoutMs`), in ms, is a stalled export loop. Default `120000`.
   */
  stalledMs?: number;
}

/** One sink's part of the health result. */
export interface SinkHealth {
  pending: number;
  /** Where the sink stands (`up`, `probing`, `draining`, `refusing`: see `SinkState`). */
  state?: SinkState;
  /** The sink's `maxQueueSize`, when that cap is set. */
  maxQueueSize?: number;
  /** The sink's byte budget (`maxQueueBytes`), and the bytes it holds. */
  maxQueueBytes?: number;
  heldBytes?: number;
  /** The server's code for the last write error, when the sink gave one. */
  lastErrorCode?: string;
  dropped: number;
  deadLettered: number;
  lastError?: string;
  /** For a spooled sink: items pending in the spool, its bytes and the oldest item's age (ms). */
  spool?: { pending: number; bytes: number; maxBytes: number; oldestAgeMs: number };
  /** Since when every write failed (epoch ms), while it does. */
  failingSince?: number;
  /** Age of the oldest item held in memory, in ms. */
  oldestPendingAgeMs?: number;
}

/** The result, in `@nestjs/terminus`'s `HealthIndicatorResult` shape. */
export type DeferredWorkHealthResult<Key extends string = string> = Record<
  Key,
  { status: 'up' | 'down'; degraded: boolean; reasons: string[]; sinks: Record<string, SinkHealth> }
>;

/** The liveness result, in `@nestjs/terminus`'s `HealthIndicatorResult` shape. */
export type DeferredWorkLivenessResult<Key extends string = string> = Record<Key, { status: 'up' | 'down'; reasons: string[] }>;
