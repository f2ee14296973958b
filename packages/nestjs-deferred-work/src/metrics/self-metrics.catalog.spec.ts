import type { DeferredStats, SinkStats } from '../core/stats.interface';
import { OBSERVED_METRICS, prometheusName, WRITE_DURATION } from './self-metrics.catalog';
import type { SelfMetricsSnapshot } from './self-metrics.snapshot';

const sink = (over: Partial<SinkStats>): SinkStats => ({
  accepted: 5, delivered: 3, pending: 2, dropped: 0, deadLettered: 0, retried: 1, queueDepth: 1, inFlight: 1, duplicates: 0, writes: 4, failedWrites: 1, ...over,
});

const snapshot: SelfMetricsSnapshot = {
  stats: {
    rejected: 2,
    callbacks: { running: 1, queued: 2, retrying: 1, concurrency: 8, timedOut: 3, overdue: 0, finishedLate: 0, slowest: [] },
    sinks: {
      jobs: sink({
        host: { thread: 'worker', running: true, restarts: 2, writesLostToRestarts: 1 } as SinkStats['host'],
        spool: { dir: '/s', maxBytes: 1000, pending: 2, onDiskOnly: 0, bytes: 300, oldestAgeMs: 1500, bytesWritten: 4200 } as SinkStats['spool'],
        redriven: 7,
        deadLettered: 4,
        deadLetteredByReason: { 'not-retryable': 1, 'attempts-exhausted': 3 },
      }),
      callbacks: sink({ failedWrites: 4 }),
    },
  } as unknown as DeferredStats,
  kinds: { jobs: { job: { accepted: 5, delivered: 3, dropped: 0, deadLettered: 0, retried: 1 } }, callbacks: {} },
  capacity: { jobs: 100, callbacks: 50 },
  byteCapacity: { jobs: 33554432 },
};

const read = (name: string) => OBSERVED_METRICS.find((m) => m.name === name)!.read(snapshot);

describe('the self-metrics catalog', () => {
  it('reads each metric from one snapshot, with bounded labels', () => {
    expect(read('sent_items')).toEqual([[{ sink: 'jobs', kind: 'job' }, 3]]);
    expect(read('queue_size')).toEqual([[{ sink: 'jobs' }, 2], [{ sink: 'callbacks' }, 2]]);
    expect(read('queue_capacity')).toEqual([[{ sink: 'jobs' }, 100], [{ sink: 'callbacks' }, 50]]);
    expect(read('rejected_items')).toEqual([[{}, 2]]);
    expect(read('callbacks_queued')).toEqual([[{}, 3]]);
    expect(read('callbacks_timed_out')).toEqual([[{}, 3]]);
    expect(read('callbacks_failed')).toEqual([[{}, 4]]);
    // Only for the sinks that have a spool, or run in a worker thread.
    expect(read('spool')).toEqual([[{ sink: 'jobs' }, 300]]);
    expect(read('spool_oldest_age')).toEqual([[{ sink: 'jobs' }, 1.5]]);
    expect(read('worker_restarts')).toEqual([[{ sink: 'jobs' }, 2]]);
    expect(read('spool_written')).toEqual([[{ sink: 'jobs' }, 4200]]);
    // For the sinks whose stats carry the count (the callbacks sink here does not).
    expect(read('redriven_items')).toEqual([[{ sink: 'jobs' }, 7]]);
    // By reason: a closed set (never an error message), every reason of every sink, 0 until seen.
    const byReason = read('dead_lettered_items');
    expect(byReason).toHaveLength(2 * 8);
    expect(byReason).toEqual(expect.arrayContaining([[{ sink: 'jobs', reason: 'not-retryable' }, 1], [{ sink: 'jobs', reason: 'attempts-exhausted' }, 3], [{ sink: 'jobs', reason: 'shutdown' }, 0], [{ sink: 'callbacks', reason: 'timeout' }, 0]]));
  });

  it("names metrics by Prometheus' conventions", () => {
    const names = OBSERVED_METRICS.map((m) => prometheusName('deferred_work_', m));
    expect(names).toEqual(expect.arrayContaining(['deferred_work_sent_items_total', 'deferred_work_queue_size', 'deferred_work_spool_bytes', 'deferred_work_spool_oldest_age_seconds', 'deferred_work_redriven_items_total', 'deferred_work_spool_written_bytes_total', 'deferred_work_dead_lettered_items_total']));
    expect(prometheusName('x_', WRITE_DURATION)).toBe('x_write_duration_seconds');
    expect(new Set(names).size).toBe(names.length);
  });
});
