import type { Dispatcher } from '../../pipeline/dispatcher';
import type { SinkSpoolStats, SinkStats } from '../../core/stats.interface';
import { DeferredWorkHealthIndicator } from './deferred-work.health-indicator';

const spool = (over: Partial<SinkSpoolStats>): SinkSpoolStats => ({
  dir: '/spool/jobs', maxBytes: 1000, pending: 3, onDiskOnly: 0, bytes: 100, oldestAgeMs: 10, replayed: 0, refused: 0, failed: 0,
  unreadable: 0, keptAtShutdown: 0, requeued: 0, tornRecords: 0, fsyncs: 1, syncErrors: 0, appended: 3, acked: 0, bytesWritten: 300, ...over,
});

function indicator(sink: Partial<SinkStats>) {
  const stats = { accepted: 3, delivered: 0, pending: 3, dropped: 0, deadLettered: 0, retried: 0, queueDepth: 3, inFlight: 0, writes: 0, failedWrites: 0, ...sink };
  const dispatcher = {
    stats: () => ({ sinks: { jobs: stats } }),
    options: { processorOptions: new Map([['jobs', { maxQueueSize: 2 }]]), callbacks: { maxQueueSize: 10 } },
  } as unknown as Dispatcher;
  return new DeferredWorkHealthIndicator(dispatcher);
}

describe('DeferredWorkHealthIndicator with a spooled sink', () => {
  it('ignores the memory queue bound (the overflow is on disk) and is up while the spool is small and young', () => {
    expect(indicator({ spool: spool({}) }).isHealthy()).toEqual({
      deferredWork: expect.objectContaining({ status: 'up', degraded: false, reasons: [] }),
    });
    // Without a spool, 3 pending of maxQueueSize 2 is near full.
    expect(indicator({}).isHealthy().deferredWork.reasons).toEqual(['sink "jobs" queue 3/2 is near full']);
  });

  it('is down past spoolFullRatio of maxBytes, and past spoolMaxAgeMs', () => {
    const full = indicator({ spool: spool({ bytes: 800 }) }).isHealthy('deferredWork');
    expect(full.deferredWork).toMatchObject({ status: 'down', degraded: true, reasons: ['sink "jobs" spool 800/1000 bytes is near full'] });
    expect(full.deferredWork.sinks.jobs!.spool).toEqual({ pending: 3, bytes: 800, maxBytes: 1000, oldestAgeMs: 10 });
    expect(indicator({ spool: spool({ bytes: 800 }) }).isHealthy('deferredWork', { spoolFullRatio: 0.9 }).deferredWork.status).toBe('up');
    // Nothing pending: the bytes are a fully confirmed segment that the next append deletes.
    expect(indicator({ pending: 0, spool: spool({ bytes: 1100, pending: 0 }) }).isHealthy().deferredWork.status).toBe('up');
    const old = indicator({ spool: spool({ oldestAgeMs: 301_000 }) }).isHealthy('deferredWork');
    expect(old.deferredWork.reasons).toEqual(['sink "jobs" spool holds an item waiting for 301 s (over 300000 ms)']);
    expect(indicator({ spool: spool({ oldestAgeMs: 301_000 }) }).isHealthy('deferredWork', { spoolMaxAgeMs: 600_000 }).deferredWork.status).toBe('up');
  });
});
