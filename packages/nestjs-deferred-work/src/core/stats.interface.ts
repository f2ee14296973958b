import type { DeadLetterReason } from './dead-letter.interface';
import type { SinkHostStats } from './sink.interface';

/** Why items were dead-lettered: a dead letter's reason, or `unreadable` (a spooled item that could not be read back). */
export type DeadLetteredReason = DeadLetterReason | 'unreadable';

/** Where accepted items are. `accepted = delivered + pending + dropped + deadLettered`, always. */
export interface ItemCounts {
  /** Items handed to a sink's queue (after validation), dropped ones included. */
  accepted: number;
  delivered: number;
  /** Queued, in flight or waiting for a retry. */
  pending: number;
  /** Refused for want of room: the sink's byte budget or count cap full (without a spool), or its spool full. */
  dropped: number;
  deadLettered: number;
  /** Item retries made (an item retried twice counts twice). */
  retried: number;
}

/**
 * Where a sink stands:
 * - `up`: its writes go through.
 * - `probing`: every write fails (since `failingSince`, with `lastError` and `lastErrorCode`); only the
 *   oldest batch is retried, with backoff up to `maxBackoffMs`, and the rest wait in order.
 * - `draining`: it came back, and delivers the backlog the outage left (since `outageSince`).
 * - `refusing`: it holds as many bytes (or items) as its budget allows and drops new items (since `refusingSince`).
 */
export type SinkState = 'up' | 'probing' | 'draining' | 'refusing';

/** Why items were dropped: no room in memory (`queue-full`: the byte budget or the count cap), or the spool refused them (`spool-full`). */
export type DropReason = 'queue-full' | 'spool-full';

/** Counters of one sink. accepted = delivered + pending + dropped + deadLettered, always. */
export interface SinkStats extends ItemCounts {
  /** Where the sink stands (see {@link SinkState}). Absent for the callback runner. */
  state?: SinkState;
  /**
   * Since when the current outage lasts (epoch ms): from the first write that delivered nothing until
   * the backlog held when the sink came back has drained. Absent when there is none.
   */
  outageSince?: number;
  /** Since when items are dropped for want of room (epoch ms); absent once the sink holds less than 90% of its budget again. */
  refusingSince?: number;
  /** Bytes of the items held in memory (queued, in flight, waiting for a retry), as the byte budget counts them. */
  heldBytes?: number;
  /** `dropped` by reason (only the reasons seen). */
  droppedByReason?: Partial<Record<DropReason, number>>;
  /** Items waiting in the queue (not in flight). */
  queueDepth: number;
  /** Items in the write in flight or waiting for its retry. */
  inFlight: number;
  /**
   * Items the server already had and skipped (same item id: a retry after a lost reply, or a spool
   * replay), as the sink reported them. Counted in `delivered` too. Default `0`.
   */
  duplicates: number;
  /** Writes started, and those that failed in whole or part. */
  writes: number;
  failedWrites: number;
  /** The last write error's message, and when (epoch ms). */
  lastError?: string;
  lastErrorAt?: number;
  /** The server's code for the last write error (SQLSTATE, errno, Redis prefix, AWS code), when the sink gave one. */
  lastErrorCode?: string;
  /** Duration of the last write, in ms. */
  lastWriteMs?: number;
  /** When an item was last dropped, and last dead-lettered (epoch ms). */
  lastDropAt?: number;
  lastDeadLetterAt?: number;
  /**
   * `deadLettered` by the dead letter's reason (only the reasons seen): `not-retryable`, `expired`,
   * `attempts-exhausted`, `timeout`, `shutdown`, `closed`, and `unreadable` for spooled items that could
   * not be read back from disk.
   */
  deadLetteredByReason?: Partial<Record<DeadLetteredReason, number>>;
  /**
   * Dead letters handed back to this sink by `DeferredWork.redriveDeadLetters()`: each is counted in
   * `accepted` again, then settles like any item (delivered, pending, dropped or dead-lettered again).
   */
  redriven?: number;
  /** Since when every write of this sink failed (epoch ms); absent once a write went through completely. */
  failingSince?: number;
  /** When the write (for callbacks: the oldest run) in flight started (epoch ms); absent when none is. */
  writeInFlightSince?: number;
  /**
   * Writes the library gave up on (timed out, aborted, still pending after a grace) that have not
   * settled since: the sink or its client ignores the abort signal. Absent when none.
   */
  unsettledWrites?: number;
  /** When the oldest of `unsettledWrites` started (epoch ms). */
  unsettledWriteSince?: number;
  /** When a write (for callbacks: a run) last started or ended (epoch ms). */
  lastProgressAt?: number;
  /** Age of the oldest item held in memory (queued, in flight or waiting for a retry), in ms; 0 when none. */
  oldestPendingAgeMs?: number;
  /** For a sink running in a worker thread (`OffloadedSink`): the worker's restarts and busy time. */
  host?: SinkHostStats;
  /** For a sink with a disk spool (the `spool` option): what is on disk. */
  spool?: SinkSpoolStats;
}

/** What `stats().sinks[name].spool` reports for a sink with a disk spool. */
export interface SinkSpoolStats {
  /** The sink's spool directory. */
  dir: string;
  /** The configured `maxBytes`. */
  maxBytes: number;
  /** Items spooled and not yet confirmed by the sink (or dead-lettered): what a crash now would replay. */
  pending: number;
  /** Of those, the ones on disk only (waiting behind a full memory queue, or replayed and not yet read back). */
  onDiskOnly: number;
  /** Bytes of the spool's files (what `maxBytes` bounds). */
  bytes: number;
  /** Age of the oldest pending item, in ms (0 when none). */
  oldestAgeMs: number;
  /** Items a previous process left, found at bootstrap and delivered before new ones (counted in `accepted`). */
  replayed: number;
  /** Items refused because the spool was full (`maxBytes`, or the disk): counted in `dropped`. */
  refused: number;
  /** Items that could not be written to the spool for another reason (an I/O error): counted in `dropped`. */
  failed: number;
  /** Spooled items that could not be read back from disk (never expected): counted in `deadLettered`. */
  unreadable: number;
  /** Items still pending when shutdown's deadline passed: left in the spool (not acked) for the next start. */
  keptAtShutdown: number;
  /**
   * Times an item that used up `maxAttempts` was sent to the back of the spool to be tried again later
   * (when the user set no `maxAttempts`), instead of holding the sink's other items. Its record stays
   * where it is: nothing is written again, however long the sink is down.
   */
  requeued: number;
  /** Torn records (a write cut short by a crash, a checksum mismatch) found at bootstrap and skipped. */
  tornRecords: number;
  /** Fsyncs made (one per file per group commit), and group commits whose fsync failed. */
  fsyncs: number;
  syncErrors: number;
  /** Items appended to the spool and acked (delivered, or dead-lettered for cause) by this process; a requeue counts in neither. */
  appended: number;
  acked: number;
  /**
   * Bytes this process wrote to the spool's files: each item's record once and its ack. Divided by
   * `appended`, the bytes written per item — the spool's write amplification, which does not grow
   * with an outage's length (an item waiting for its sink is read again, never written again).
   */
  bytesWritten: number;
}

/** What `DeferredWork.stats()` returns. The totals are the sums over `sinks`. */
export interface DeferredStats extends ItemCounts {
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

/** What the dispatcher knows: everything in {@link DeferredStats} but the requests and their timings. */
export type DispatcherStats = Omit<DeferredStats, 'requests' | 'routes'>;

/** Per-route timing sums, as `stats().routes[\`${method} ${route}\`]` shows them. */
export interface RouteTimingStats {
  /** Requests measured (finished responses only). */
  count: number;
  /** Mean and largest time from the request reaching the interceptor until the handler returned, in ms. */
  handlerMsAvg: number;
  handlerMsMax: number;
  /** Median and 95th percentile of that time, in ms (from a fixed histogram: within about ±12.5%, never above the largest). */
  handlerMsP50: number;
  handlerMsP95: number;
  /** Mean and largest time from the handler's return until the response finished, in ms. */
  sendMsAvg: number;
  sendMsMax: number;
  /** Median and 95th percentile of that time, in ms (as for the handler's). */
  sendMsP50: number;
  sendMsP95: number;
  /** Mean and largest number of items a request deferred before its response finished (`run(fn)` callbacks included). */
  itemsAvg: number;
  itemsMax: number;
}

/** What `stats().callbacks` reports about the runner. */
export interface CallbackRunnerStats {
  /** Callbacks running now (timed-out ones excluded). */
  running: number;
  /** Callbacks waiting for a slot. */
  queued: number;
  /** Callbacks waiting for their next try. */
  retrying: number;
  /** The configured `concurrency`. */
  concurrency: number;
  /** Callbacks that ran past `timeoutMs`: their signal was aborted and they were dead-lettered (reason `timeout`). */
  timedOut: number;
  /** Of those, the ones still running (they ignore their signal). */
  overdue: number;
  /** Of those, the ones that ended after all (resolved or rejected), late. */
  finishedLate: number;
  /** The longest runs seen (ms, longest first, at most 5), with when they ended (epoch ms). */
  slowest: Array<{ ms: number; at: number }>;
}
