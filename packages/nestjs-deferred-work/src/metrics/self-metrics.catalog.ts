import type { DeadLetteredReason } from '../core/stats.interface';
import type { SelfMetricsSnapshot } from './self-metrics.snapshot';

/** Every reason an item is dead-lettered for: the `reason` label's values (each sink shows all, at 0 until seen, so that rate() sees the first one). */
export const DEAD_LETTERED_REASONS: readonly DeadLetteredReason[] = ['not-retryable', 'expired', 'attempts-exhausted', 'timeout', 'shutdown', 'shutdown-in-flight', 'closed', 'unreadable'];

/** Labels of one series. */
export type Labels = Record<string, string>;
/** One series' value. */
export type Sample = readonly [labels: Labels, value: number];

/** Units, as OpenTelemetry writes them; Prometheus names end in `_seconds`, `_bytes`, or nothing for items. */
export type SelfMetricUnit = 's' | 'By' | '{item}' | '{write}' | '{callback}' | '{restart}';

/** One of the library's own metrics, whatever it is exported to. */
interface SelfMetricBase {
  /** Name without prefix or unit suffix, e.g. `sent_items` or `write_duration`. */
  name: string;
  unit: SelfMetricUnit;
  help: string;
  labels: readonly string[];
}

/** A metric read from the library's state when the app's metrics are collected. */
export interface ObservedMetric extends SelfMetricBase {
  type: 'counter' | 'gauge';
  read(snapshot: SelfMetricsSnapshot): Sample[];
}

/** A histogram recorded on the write path (or when a measured response finished). */
export interface RecordedMetric extends SelfMetricBase {
  type: 'histogram';
  /** Bucket upper bounds. */
  buckets: readonly number[];
}

/** A counter counted on the write path. */
export interface RecordedCounter extends SelfMetricBase {
  type: 'counter';
}

/** Failed writes by the server's error code (`error_type`: the code the sink gave, or `unknown`). */
export const WRITE_ERRORS: RecordedCounter = {
  name: 'write_errors',
  type: 'counter',
  unit: '{write}',
  labels: ['sink', 'error_type'],
  help: 'Failed writes by the error code the sink gave (SQLSTATE, errno, Redis error prefix, ...; "unknown" without one).',
};

const SINK = ['sink'] as const;
const SINK_KIND = ['sink', 'kind'] as const;

/** Per sink and kind, one of the counts by kind. */
const byKind = (key: 'accepted' | 'delivered' | 'dropped' | 'deadLettered' | 'retried') => (s: SelfMetricsSnapshot) =>
  Object.entries(s.kinds).flatMap(([sink, kinds]) => Object.entries(kinds).map(([kind, counts]): Sample => [{ sink, kind }, counts[key]]));

/** Per sink, a number read from its stats (sinks without it are left out). */
const bySink = (read: (name: string, s: SelfMetricsSnapshot) => number | undefined) => (s: SelfMetricsSnapshot) =>
  Object.keys(s.stats.sinks).flatMap((sink): Sample[] => {
    const value = read(sink, s);
    return value === undefined ? [] : [[{ sink }, value]];
  });

/** The metrics read from `stats()` at collection time. */
export const OBSERVED_METRICS: readonly ObservedMetric[] = [
  { name: 'accepted_items', type: 'counter', unit: '{item}', labels: SINK_KIND, help: 'Items accepted into a sink\'s queue (after validation; dropped ones included).', read: byKind('accepted') },
  { name: 'sent_items', type: 'counter', unit: '{item}', labels: SINK_KIND, help: 'Items delivered: the sink confirmed them (or, for callbacks, they ran).', read: byKind('delivered') },
  { name: 'send_failed_items', type: 'counter', unit: '{item}', labels: SINK_KIND, help: 'Items dead-lettered: not retryable, out of attempts, or given up at shutdown.', read: byKind('deadLettered') },
  {
    name: 'dead_lettered_items',
    type: 'counter',
    unit: '{item}',
    labels: ['sink', 'reason'],
    help: 'Items dead-lettered, by reason: not-retryable, expired, attempts-exhausted, timeout, shutdown, shutdown-in-flight (a write in flight at the deadline: it may have been delivered), closed, unreadable (a spooled item not read back).',
    read: (s) =>
      Object.entries(s.stats.sinks).flatMap(([sink, stats]) => DEAD_LETTERED_REASONS.map((reason): Sample => [{ sink, reason }, stats.deadLetteredByReason?.[reason] ?? 0])),
  },
  { name: 'enqueue_failed_items', type: 'counter', unit: '{item}', labels: SINK_KIND, help: 'Items dropped because the sink\'s queue (or spool) was full.', read: byKind('dropped') },
  { name: 'retried_items', type: 'counter', unit: '{item}', labels: SINK_KIND, help: 'Item retries (an item retried twice counts twice).', read: byKind('retried') },
  { name: 'rejected_items', type: 'counter', unit: '{item}', labels: [], help: 'Items refused before acceptance (invalid, unserialisable, too large, unknown sink).', read: (s) => [[{}, s.stats.rejected]] },
  { name: 'redriven_items', type: 'counter', unit: '{item}', labels: SINK, help: 'Dead letters handed back to the sink by a redrive (each also counted in accepted_items).', read: bySink((sink, s) => s.stats.sinks[sink].redriven) },
  { name: 'writes', type: 'counter', unit: '{write}', labels: SINK, help: 'Writes (batches) started.', read: bySink((sink, s) => s.stats.sinks[sink].writes) },
  { name: 'failed_writes', type: 'counter', unit: '{write}', labels: SINK, help: 'Writes that failed in whole or part.', read: bySink((sink, s) => s.stats.sinks[sink].failedWrites) },
  { name: 'queue_size', type: 'gauge', unit: '{item}', labels: SINK, help: 'Items pending: queued, in flight, waiting for a retry (or on disk in the spool).', read: bySink((sink, s) => s.stats.sinks[sink].pending) },
  { name: 'queue_capacity', type: 'gauge', unit: '{item}', labels: SINK, help: 'The sink\'s maxQueueSize, when that cap is set.', read: bySink((sink, s) => s.capacity[sink]) },
  { name: 'queue_held', type: 'gauge', unit: 'By', labels: SINK, help: 'Bytes of the items held in memory, as the byte budget counts them.', read: bySink((sink, s) => s.stats.sinks[sink].heldBytes) },
  { name: 'queue_held_capacity', type: 'gauge', unit: 'By', labels: SINK, help: 'The sink\'s maxQueueBytes.', read: bySink((sink, s) => s.byteCapacity[sink]) },
  { name: 'queue_depth', type: 'gauge', unit: '{item}', labels: SINK, help: 'Items waiting in the queue (not in flight).', read: bySink((sink, s) => s.stats.sinks[sink].queueDepth) },
  { name: 'in_flight_items', type: 'gauge', unit: '{item}', labels: SINK, help: 'Items in the write in flight or waiting for its retry.', read: bySink((sink, s) => s.stats.sinks[sink].inFlight) },
  { name: 'callbacks_running', type: 'gauge', unit: '{callback}', labels: [], help: 'run(fn) callbacks running now (timed-out ones excluded).', read: (s) => [[{}, s.stats.callbacks.running]] },
  { name: 'callbacks_queued', type: 'gauge', unit: '{callback}', labels: [], help: 'run(fn) callbacks waiting for a slot or their next try.', read: (s) => [[{}, s.stats.callbacks.queued + s.stats.callbacks.retrying]] },
  { name: 'callbacks_timed_out', type: 'counter', unit: '{callback}', labels: [], help: 'run(fn) callbacks that ran past their timeout (dead-lettered).', read: (s) => [[{}, s.stats.callbacks.timedOut]] },
  { name: 'callbacks_failed', type: 'counter', unit: '{callback}', labels: [], help: 'run(fn) callback runs that threw or rejected.', read: (s) => [[{}, s.stats.sinks.callbacks?.failedWrites ?? 0]] },
  { name: 'spool', type: 'gauge', unit: 'By', labels: SINK, help: 'Bytes of the sink\'s spool files.', read: bySink((sink, s) => s.stats.sinks[sink].spool?.bytes) },
  { name: 'spool_capacity', type: 'gauge', unit: 'By', labels: SINK, help: 'The spool\'s maxBytes.', read: bySink((sink, s) => s.stats.sinks[sink].spool?.maxBytes) },
  { name: 'spool_pending_items', type: 'gauge', unit: '{item}', labels: SINK, help: 'Items spooled and not yet confirmed (what a crash now would replay).', read: bySink((sink, s) => s.stats.sinks[sink].spool?.pending) },
  { name: 'spool_written', type: 'counter', unit: 'By', labels: SINK, help: 'Bytes this process wrote to the spool (records and batch marks): against sent_items, the write amplification.', read: bySink((sink, s) => s.stats.sinks[sink].spool?.bytesWritten) },
  {
    name: 'spool_oldest_age',
    type: 'gauge',
    unit: 's',
    labels: SINK,
    help: 'Age of the oldest item pending in the spool (0 when none).',
    read: bySink((sink, s) => {
      const ms = s.stats.sinks[sink].spool?.oldestAgeMs;
      return ms === undefined ? undefined : ms / 1000;
    }),
  },
  { name: 'worker_restarts', type: 'counter', unit: '{restart}', labels: SINK, help: 'Restarts of an offloaded sink\'s worker thread.', read: bySink((sink, s) => s.stats.sinks[sink].host?.restarts) },
];

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A histogram of the catalog. */
const histogram = (name: string, unit: SelfMetricUnit, labels: readonly string[], buckets: readonly number[], help: string): RecordedMetric => ({
  name,
  type: 'histogram',
  unit,
  labels,
  buckets,
  help,
});

/** The histograms recorded as writes happen (and, opt-in, as measured responses finish). */
export const WRITE_DURATION = histogram('write_duration', 's', ['sink', 'outcome'], SECONDS, 'Duration of one write (batch) to a sink; outcome "success", or "failure" when some of it failed.');
export const WRITE_BATCH_SIZE = histogram('write_batch_size', '{item}', SINK, [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], 'Items per write (batch) to a sink.');
export const DELIVERY_LAG = histogram('delivery_lag', 's', SINK_KIND, [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], "Time from an item's acceptance to its delivery (opt-in: deliveryLag).");
const ROUTE = ['method', 'route'] as const;
const ROUTE_SECONDS = [0.0005, ...SECONDS.slice(0, 10)];
export const ROUTE_HANDLER = histogram('route_handler_duration', 's', ROUTE, ROUTE_SECONDS, 'Time from the request reaching the interceptor until the handler returned, per route template (opt-in: routeTimings, with timing on).');
export const ROUTE_SEND = histogram('route_send_duration', 's', ROUTE, ROUTE_SECONDS, "Time from the handler's return until the response finished, per route template (opt-in: routeTimings, with timing on).");

/** Prometheus' name of a metric: prefix, name, unit suffix, and `_total` for a counter. */
export function prometheusName(prefix: string, metric: SelfMetricBase & { type: string }): string {
  const unit = metric.unit === 's' ? '_seconds' : metric.unit === 'By' ? '_bytes' : '';
  return `${prefix}${metric.name}${unit}${metric.type === 'counter' ? '_total' : ''}`;
}
