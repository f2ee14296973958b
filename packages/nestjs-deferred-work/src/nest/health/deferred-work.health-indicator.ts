import { Inject, Injectable } from '@nestjs/common';
import { Dispatcher } from '../../pipeline/dispatcher';
import { CALLBACK_RUNNER_NAME } from '../../pipeline/callbacks/callback-runner';
import type { SinkStats } from '../../core/stats.interface';
import { capacityReasons, outageReasons, wedgedReasons, wedgedRunnerReasons, type CapacityThresholds } from './health-checks';
import type {
  DeferredWorkHealthOptions,
  DeferredWorkHealthResult,
  DeferredWorkLivenessOptions,
  DeferredWorkLivenessResult,
  DeferredWorkReadinessOptions,
  SinkHealth,
} from './health-options';


/**
 * Health indicators for `@nestjs/terminus` (11 or later; none of its code is imported, so it is an
 * optional peer). Mount `isReady` on the readiness probe and `isLive` on the liveness probe (see
 * docs/health.md):
 *
 * ```ts
 * @Get('health/ready')
 * @HealthCheck()
 * ready() {
 *   return this.health.check([() => this.deferred.isReady('deferredWork')]);
 * }
 *
 * @Get('health/live')
 * @HealthCheck()
 * live() {
 *   return this.health.check([() => this.deferred.isLive('deferredWork')]);
 * }
 * ```
 */
@Injectable()
export class DeferredWorkHealthIndicator {
  constructor(@Inject(Dispatcher) private readonly dispatcher: Dispatcher) {}

  /**
   * Readiness: `down` when a sink's queue (its byte budget, or `maxQueueSize` when set) or spool is
   * near full, items were dropped recently or are being dropped, a sink has been in an outage for
   * `failingForMs` (from its first write that delivered nothing until the backlog it left has drained;
   * before anything is dropped), a write has been in flight that long, or a sink holds
   * an item older than `pendingMaxAgeMs` (`spoolMaxAgeMs` for a spooled one); `up` with
   * `degraded: true` when items were only dead-lettered recently. Never on a liveness probe: an outage
   * of a sink is no reason to restart the app (and lose its in-memory queue).
   */
  isReady<const Key extends string = 'deferredWork'>(key: Key = 'deferredWork' as Key, options: DeferredWorkReadinessOptions = {}): DeferredWorkHealthResult<Key> {
    const failingForMs = options.failingForMs ?? 60_000;
    const pendingMaxAgeMs = options.pendingMaxAgeMs ?? 300_000;
    return this.check(key, options, (name, s, now) => outageReasons(name, s, failingForMs, pendingMaxAgeMs, now));
  }

  /**
   * Liveness: `down` only when the pipeline is wedged — a write in flight `wedgedWriteMs` past its
   * timeout, a write given up on that ignored its abort signal and is still unsettled as long, items held and no write started for `stalledMs` beyond the sink's longest legitimate wait,
   * or every callback slot held by callbacks that ignore their timeout while others wait. A slow or
   * failing sink, full queues, drops and dead letters never make it `down`.
   */
  isLive<const Key extends string = 'deferredWork'>(key: Key = 'deferredWork' as Key, options: DeferredWorkLivenessOptions = {}): DeferredWorkLivenessResult<Key> {
    const wedgedWriteMs = options.wedgedWriteMs ?? 60_000;
    const stalledMs = options.stalledMs ?? 120_000;
    const now = Date.now();
    const stats = this.dispatcher.stats();
    const reasons: string[] = [];
    for (const [name, s] of Object.entries(stats.sinks)) {
      if (name === CALLBACK_RUNNER_NAME) reasons.push(...wedgedRunnerReasons(s, stats.callbacks, this.dispatcher.options.callbacks, stalledMs, now));
      else reasons.push(...wedgedReasons(name, s, this.dispatcher.options.processorOptions.get(name)!, wedgedWriteMs, stalledMs, now));
    }
    return { [key]: { status: reasons.length > 0 ? 'down' : 'up', reasons } } as DeferredWorkLivenessResult<Key>;
  }

  /**
   * The original check, kept as it was: the capacity checks of `isReady` without the outage ones.
   * @deprecated Use `isReady` on the readiness probe and `isLive` on the liveness probe (docs/health.md).
   */
  isHealthy<const Key extends string = 'deferredWork'>(key: Key = 'deferredWork' as Key, options: DeferredWorkHealthOptions = {}): DeferredWorkHealthResult<Key> {
    return this.check(key, options, () => []);
  }

  private check<Key extends string>(
    key: Key,
    options: DeferredWorkHealthOptions,
    more: (name: string, s: SinkStats, now: number) => string[],
  ): DeferredWorkHealthResult<Key> {
    const t: CapacityThresholds = {
      queueFullRatio: options.queueFullRatio ?? 0.8,
      recentMs: options.recentMs ?? 60_000,
      spoolMaxAgeMs: options.spoolMaxAgeMs ?? 300_000,
      spoolFullRatio: options.spoolFullRatio ?? 0.8,
    };
    const now = Date.now();
    const reasons: string[] = [];
    const deadLetters: string[] = [];
    const sinks: Record<string, SinkHealth> = {};
    for (const [name, s] of Object.entries(this.dispatcher.stats().sinks)) {
      const runner = name === CALLBACK_RUNNER_NAME;
      // The callback runner's bound is on callbacks waiting (running ones hold slots, not queue room).
      const sinkOptions = runner ? undefined : this.dispatcher.options.processorOptions.get(name)!;
      const maxQueueSize = sinkOptions ? sinkOptions.maxQueueSize : this.dispatcher.options.callbacks.maxQueueSize;
      const held = runner ? s.queueDepth : s.pending;
      if (!runner || s.accepted > 0) sinks[name] = sinkHealth(s, maxQueueSize, sinkOptions?.maxQueueBytes);
      reasons.push(...capacityReasons(name, s, maxQueueSize, held, t, now, sinkOptions?.maxQueueBytes));
      if (!runner) reasons.push(...more(name, s, now));
      if (s.lastDeadLetterAt !== undefined && now - s.lastDeadLetterAt <= t.recentMs) {
        deadLetters.push(`sink "${name}" dead-lettered items in the last ${t.recentMs} ms${s.lastError ? ` (${s.lastError})` : ''}`);
      }
    }
    const degraded = reasons.length > 0 || deadLetters.length > 0;
    // Capacity trouble (a queue near full, items dropped) is `down`; dead letters alone — a throwing
    // callback, a bad item refused by the receiver — are `up` but degraded.
    const status = reasons.length > 0 ? 'down' : 'up';
    return { [key]: { status, degraded, reasons: [...reasons, ...deadLetters], sinks } } as DeferredWorkHealthResult<Key>;
  }
}

function sinkHealth(s: SinkStats, maxQueueSize: number, maxQueueBytes: number | undefined): SinkHealth {
  const health: SinkHealth = { pending: s.pending, dropped: s.dropped, deadLettered: s.deadLettered, lastError: s.lastError };
  if (Number.isFinite(maxQueueSize)) health.maxQueueSize = maxQueueSize;
  if (maxQueueBytes !== undefined) {
    health.maxQueueBytes = maxQueueBytes;
    health.heldBytes = s.heldBytes ?? 0;
  }
  if (s.state !== undefined) health.state = s.state;
  if (s.lastErrorCode !== undefined) health.lastErrorCode = s.lastErrorCode;
  if (s.spool) {
    const { pending, bytes, maxBytes, oldestAgeMs } = s.spool;
    health.spool = { pending, bytes, maxBytes, oldestAgeMs };
  }
  if (s.failingSince !== undefined) health.failingSince = s.failingSince;
  if (s.oldestPendingAgeMs !== undefined) health.oldestPendingAgeMs = s.oldestPendingAgeMs;
  return health;
}
