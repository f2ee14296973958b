import type { SinkStats } from '../../core/stats.interface';
import type { CallbackRunnerOptions } from '../../pipeline/callbacks/callback-runner.options';
import type { CallbackRunnerStats } from '../../core/stats.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';

/** Thresholds of the capacity checks that both `isHealthy` and `isReady` make. */
export interface CapacityThresholds {
  queueFullRatio: number;
  recentMs: number;
  spoolMaxAgeMs: number;
  spoolFullRatio: number;
}

/**
 * @internal
 * A sink's capacity trouble: its queue near full (not for a spooled sink: its bound is on disk), its
 * spool near full or holding an old item, items dropped recently.
 */
export function capacityReasons(name: string, s: SinkStats, maxQueueSize: number, held: number, t: CapacityThresholds, now: number, maxQueueBytes = Number.POSITIVE_INFINITY): string[] {
  const reasons: string[] = [];
  if (!s.spool && held >= maxQueueSize * t.queueFullRatio && maxQueueSize > 0) reasons.push(`sink "${name}" queue ${held}/${maxQueueSize} is near full`);
  else if (!s.spool && (s.heldBytes ?? 0) >= maxQueueBytes * t.queueFullRatio) reasons.push(`sink "${name}" holds ${s.heldBytes}/${maxQueueBytes} bytes of items (maxQueueBytes): near full`);
  if (s.refusingSince !== undefined) reasons.push(`sink "${name}" has dropped new items since ${new Date(s.refusingSince).toISOString()}: its budget is full`);
  if (s.spool) {
    const { pending, bytes, maxBytes, oldestAgeMs } = s.spool;
    // With nothing pending the bytes are a fully confirmed segment, deleted by the next append: not full.
    if (pending > 0 && bytes >= maxBytes * t.spoolFullRatio) reasons.push(`sink "${name}" spool ${bytes}/${maxBytes} bytes is near full`);
    if (oldestAgeMs > t.spoolMaxAgeMs) reasons.push(`sink "${name}" spool holds an item waiting for ${Math.round(oldestAgeMs / 1000)} s (over ${t.spoolMaxAgeMs} ms)`);
  }
  if (s.lastDropAt !== undefined && now - s.lastDropAt <= t.recentMs) reasons.push(`sink "${name}" dropped items in the last ${t.recentMs} ms`);
  return reasons;
}

/**
 * @internal
 * A sink in an outage for `failingForMs` — from its first write that delivered nothing until the
 * backlog it left has drained, whatever the retry gap — or with a write in flight that long (a write
 * started before the outage ends only at its timeout), or (without a spool) holding an item older than
 * `pendingMaxAgeMs`.
 */
export function outageReasons(name: string, s: SinkStats, failingForMs: number, pendingMaxAgeMs: number, now: number): string[] {
  const reasons: string[] = [];
  const error = s.lastError ? `: ${s.lastError}` : '';
  if (s.outageSince !== undefined && now - s.outageSince >= failingForMs) {
    const seconds = Math.round((now - s.outageSince) / 1000);
    const what = s.state === 'draining' ? `is delivering the backlog of an outage that began ${seconds} s ago` : `has failed every write for ${seconds} s`;
    reasons.push(`sink "${name}" ${what} (over ${failingForMs} ms)${error}`);
  } else if (s.writeInFlightSince !== undefined && now - s.writeInFlightSince >= failingForMs) {
    reasons.push(`sink "${name}" has had a write in flight for ${Math.round((now - s.writeInFlightSince) / 1000)} s (over ${failingForMs} ms)`);
  }
  const age = s.oldestPendingAgeMs ?? 0;
  if (!s.spool && age > pendingMaxAgeMs) reasons.push(`sink "${name}" holds an item waiting for ${Math.round(age / 1000)} s (over ${pendingMaxAgeMs} ms)`);
  return reasons;
}

/**
 * @internal
 * A sink's pipeline that no longer moves: a write in flight `wedgedWriteMs` past its own timeout, a
 * write given up on that has not settled `wedgedWriteMs` past the timeout (its sink ignores the abort
 * signal: each retry leaks one more), or
 * items held and no write started or ended for `stalledMs` beyond the longest wait the sink may
 * legitimately take (its write timeout plus its longest retry delay). A slow or failing sink never
 * trips either: its writes time out and are retried.
 */
export function wedgedReasons(name: string, s: SinkStats, o: SinkProcessorOptions, wedgedWriteMs: number, stalledMs: number, now: number): string[] {
  if (s.writeInFlightSince !== undefined && now - s.writeInFlightSince > o.writeTimeoutMs + wedgedWriteMs) {
    return [`sink "${name}" has had a write in flight for ${Math.round((now - s.writeInFlightSince) / 1000)} s, past its writeTimeoutMs of ${o.writeTimeoutMs}`];
  }
  // Writes given up on that never settled: the sink (or its client) ignores its abort signal and holds
  // each timed-out write forever. The pipeline moves on, but every retry leaks one more.
  if (s.unsettledWriteSince !== undefined && now - s.unsettledWriteSince > o.writeTimeoutMs + wedgedWriteMs) {
    return [
      `sink "${name}" has ${s.unsettledWrites} write(s) that ignored their abort signal and have not settled for ${Math.round((now - s.unsettledWriteSince) / 1000)} s, past its writeTimeoutMs of ${o.writeTimeoutMs}: the sink or its client has no timeout of its own`,
    ];
  }
  const held = s.queueDepth + s.inFlight;
  const since = s.lastProgressAt ?? now - (s.oldestPendingAgeMs ?? 0);
  const allowed = stalledMs + o.writeTimeoutMs + Math.max(o.maxBackoffMs, o.maxRetryAfterMs);
  if (held > 0 && now - since > allowed) {
    return [`sink "${name}" holds ${held} item(s) and has started no write for ${Math.round((now - since) / 1000)} s (over ${allowed} ms)`];
  }
  return [];
}

/** @internal The callback runner: callbacks waiting while every slot is held by callbacks that ran past their timeout, and nothing ends. */
export function wedgedRunnerReasons(s: SinkStats, runner: CallbackRunnerStats, o: CallbackRunnerOptions, stalledMs: number, now: number): string[] {
  const since = s.lastProgressAt ?? now;
  const allowed = stalledMs + o.timeoutMs;
  if (runner.queued > 0 && runner.running + runner.overdue >= runner.concurrency && now - since > allowed) {
    return [
      `callback runner: ${runner.queued} callback(s) waiting, every slot held (${runner.overdue} by callbacks past their timeout that ignore their signal), nothing started or ended for ${Math.round((now - since) / 1000)} s (over ${allowed} ms)`,
    ];
  }
  return [];
}
