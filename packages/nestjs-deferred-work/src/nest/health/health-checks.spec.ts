import type { SinkStats } from '../../core/stats.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { wedgedReasons } from './health-checks';

const stats = (over: Partial<SinkStats>): SinkStats =>
  ({ accepted: 1, delivered: 0, pending: 1, dropped: 0, deadLettered: 0, retried: 0, queueDepth: 0, inFlight: 1, duplicates: 0, writes: 3, failedWrites: 3, ...over }) as SinkStats;
const options = { writeTimeoutMs: 1000, maxBackoffMs: 500, maxRetryAfterMs: 500 } as SinkProcessorOptions;
const now = 1_000_000;

describe('wedgedReasons', () => {
  it('names a sink whose given-up writes have stayed unsettled past writeTimeoutMs + wedgedWriteMs', () => {
    const s = stats({ unsettledWrites: 3, unsettledWriteSince: now - 1000 - 2000 - 1, lastProgressAt: now });
    expect(wedgedReasons('http', s, options, 2000, 60_000, now)).toEqual([
      expect.stringMatching(/^sink "http" has 3 write\(s\) that ignored their abort signal and have not settled for 3 s, past its writeTimeoutMs of 1000/),
    ]);
  });

  it('is quiet before that, and when no write is unsettled', () => {
    expect(wedgedReasons('http', stats({ unsettledWrites: 1, unsettledWriteSince: now - 2999, lastProgressAt: now }), options, 2000, 60_000, now)).toEqual([]);
    expect(wedgedReasons('http', stats({ lastProgressAt: now }), options, 2000, 60_000, now)).toEqual([]);
  });
});
