import { Inject, Injectable } from '@nestjs/common';
import { Dispatcher } from '../../pipeline/dispatcher';
import { CALLBACK_RUNNER_NAME } from '../../pipeline/callbacks/callback-runner';

/** Options of {@link DeferredWorkHealthIndicator.isHealthy}. */
export interface DeferredWorkHealthOptions {
  /** A sink holding at least this fraction of its `maxQueueSize` is near full. Default `0.8`. */
  queueFullRatio?: number;
  /** Drops or dead letters within this many ms make the check degraded. Default `60000`. */
  recentMs?: number;
  /** A spooled sink whose oldest pending item is older than this, in ms, is `down`. Default `300000` (5 minutes). */
  spoolMaxAgeMs?: number;
  /** A spooled sink whose spool uses at least this fraction of its `maxBytes` is `down`. Default `0.8`. */
  spoolFullRatio?: number;
}

/** One sink's part of the health result. */
export interface SinkHealth {
  pending: number;
  maxQueueSize: number;
  dropped: number;
  deadLettered: number;
  lastError?: string;
  /** For a spooled sink: items pending in the spool, its bytes and the oldest item's age (ms). */
  spool?: { pending: number; bytes: number; maxBytes: number; oldestAgeMs: number };
}

/** The result, in `@nestjs/terminus`'s `HealthIndicatorResult` shape. */
export type DeferredWorkHealthResult<Key extends string = string> = Record<
  Key,
  { status: 'up' | 'down'; degraded: boolean; reasons: string[]; sinks: Record<string, SinkHealth> }
>;

/**
 * A health indicator for `@nestjs/terminus` (11 or later; none of its code is imported, so it is an
 * optional peer). `down` with `degraded: true` and the reasons when a sink's queue is near full or
 * items were dropped recently, or a sink's spool is near full or holds an item older than `spoolMaxAgeMs`; `up` with `degraded: true` when items were only dead-lettered recently:
 *
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.deferred.isHealthy('deferredWork')]);
 * }
 * ```
 */
@Injectable()
export class DeferredWorkHealthIndicator {
  constructor(@Inject(Dispatcher) private readonly dispatcher: Dispatcher) {}

  isHealthy<const Key extends string = 'deferredWork'>(
    key: Key = 'deferredWork' as Key,
    options: DeferredWorkHealthOptions = {},
  ): DeferredWorkHealthResult<Key> {
    const ratio = options.queueFullRatio ?? 0.8;
    const recentMs = options.recentMs ?? 60_000;
    const spoolMaxAgeMs = options.spoolMaxAgeMs ?? 300_000;
    const spoolFullRatio = options.spoolFullRatio ?? 0.8;
    const now = Date.now();
    const reasons: string[] = [];
    const deadLetters: string[] = [];
    const sinks: Record<string, SinkHealth> = {};
    for (const [name, s] of Object.entries(this.dispatcher.stats().sinks)) {
      const runner = name === CALLBACK_RUNNER_NAME;
      // The callback runner's bound is on callbacks waiting (running ones hold slots, not queue room).
      const maxQueueSize = runner
        ? this.dispatcher.options.callbacks.maxQueueSize
        : this.dispatcher.options.processorOptions.get(name)!.maxQueueSize;
      const held = runner ? s.queueDepth : s.pending;
      if (!runner || s.accepted > 0) {
        sinks[name] = { pending: s.pending, maxQueueSize, dropped: s.dropped, deadLettered: s.deadLettered, lastError: s.lastError };
      }
      // A spooled sink holds its overflow on disk: its bound is the spool's size, not the memory queue.
      if (!s.spool && held >= maxQueueSize * ratio && maxQueueSize > 0) reasons.push(`sink "${name}" queue ${held}/${maxQueueSize} is near full`);
      if (s.spool) {
        const { pending, bytes, maxBytes, oldestAgeMs } = s.spool;
        sinks[name]!.spool = { pending, bytes, maxBytes, oldestAgeMs };
        // With nothing pending the bytes are a fully confirmed segment, deleted by the next append: not full.
        if (pending > 0 && bytes >= maxBytes * spoolFullRatio) reasons.push(`sink "${name}" spool ${bytes}/${maxBytes} bytes is near full`);
        if (oldestAgeMs > spoolMaxAgeMs) reasons.push(`sink "${name}" spool holds an item waiting for ${Math.round(oldestAgeMs / 1000)} s (over ${spoolMaxAgeMs} ms)`);
      }
      if (s.lastDropAt !== undefined && now - s.lastDropAt <= recentMs) reasons.push(`sink "${name}" dropped items in the last ${recentMs} ms`);
      if (s.lastDeadLetterAt !== undefined && now - s.lastDeadLetterAt <= recentMs) {
        deadLetters.push(`sink "${name}" dead-lettered items in the last ${recentMs} ms${s.lastError ? ` (${s.lastError})` : ''}`);
      }
    }
    const degraded = reasons.length > 0 || deadLetters.length > 0;
    // Capacity trouble (a queue near full, items dropped) is `down`; dead letters alone — a throwing
    // callback, a bad item refused by the receiver — are `up` but degraded, so a liveness probe does not
    // restart the app over them.
    const status = reasons.length > 0 ? 'down' : 'up';
    return {
      [key]: { status, degraded, reasons: [...reasons, ...deadLetters], sinks },
    } as DeferredWorkHealthResult<Key>;
  }
}
