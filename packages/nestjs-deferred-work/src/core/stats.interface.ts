import type { RouteTimingStats } from '../request-scope/route-timing';
import type { CallbackRunnerStats } from './callback-runner.options';

/** Counters of one sink. accepted = delivered + pending + dropped + deadLettered, always. */
export interface SinkStats {
  /** Items handed to this sink's queue (after validation), dropped ones included. */
  accepted: number;
  delivered: number;
  /** Queued, in flight or waiting for a retry. */
  pending: number;
  /** Refused because the queue held `maxQueueSize` items. */
  dropped: number;
  deadLettered: number;
  /** Item retries made (an item retried twice counts twice). */
  retried: number;
  /** Items waiting in the queue (not in flight). */
  queueDepth: number;
  /** Items in the write in flight or waiting for its retry. */
  inFlight: number;
  /** Writes started, and those that failed in whole or part. */
  writes: number;
  failedWrites: number;
  /** The last write error's message, and when (epoch ms). */
  lastError?: string;
  lastErrorAt?: number;
  /** Duration of the last write, in ms. */
  lastWriteMs?: number;
  /** When an item was last dropped, and last dead-lettered (epoch ms). */
  lastDropAt?: number;
  lastDeadLetterAt?: number;
}

/** What `DeferredWork.stats()` returns. The totals are the sums over `sinks`. */
export interface DeferredStats {
  accepted: number;
  delivered: number;
  pending: number;
  dropped: number;
  deadLettered: number;
  retried: number;
  /** Items refused before acceptance (invalid, unserialisable, too large, unknown sink); not in `accepted`. */
  rejected: number;
  /** Items not run because the request's outcome did not match their `when`; not in `accepted`. */
  skipped: number;
  /**
   * Items deferred after shutdown had finished: accepted and dead-lettered at once with reason
   * `closed` (included in `deadLettered`).
   */
  closed: number;
  /** The `run(fn)` callback runner: running and queued callbacks, timeouts, the slowest runs. Its counters are `sinks.callbacks`. */
  callbacks: CallbackRunnerStats;
  /** Decorated requests: finished, aborted, and still open (response not ended yet). */
  requests: { finished: number; aborted: number; open: number };
  sinks: Record<string, SinkStats>;
  /** Handler and send time per `"METHOD /route"`, for routes measured with the `timing` option. */
  routes: Record<string, RouteTimingStats>;
}
