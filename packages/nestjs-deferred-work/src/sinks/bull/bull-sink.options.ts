import type { QueueSinkOptions } from '../queue/queue-sink.options';

export type { ModuleRefLike } from '../queue/queue-sink.options';
import type { SinkProcessorOptions } from '../../core/sink.interface';

/** One job as `queue.addBulk` takes it. */
export interface BullBulkJob {
  name?: string;
  data: unknown;
  opts?: object;
}

/**
 * The part of a Bull 4 `Queue` the sink uses (a `Queue` from `bull` fits). Typed structurally so
 * that this subpath needs nothing from `bull` at runtime.
 */
export interface BullQueueLike {
  readonly name: string;
  addBulk(jobs: BullBulkJob[]): Promise<ReadonlyArray<{ id?: unknown } | null | undefined>>;
}

/**
 * Options of {@link BullSink}. Give `moduleRef`, `queues`, or both. `name` defaults to `'bull'`,
 * `queueToken` to `` `BullQueue_${name}` `` (what `getQueueToken(name)` of `@nestjs/bull` 10, 11 and
 * 12 returns), `drainBeforeQueueClose` to `true`.
 */
export type BullSinkOptions = QueueSinkOptions<BullQueueLike>;

/** The name of a Bull sink unless `name` says otherwise. */
export const BULL_SINK_NAME = 'bull';

/**
 * Dispatcher settings of a Bull sink, over the module's globals (the module's `sinkOptions.bull` wins):
 * - `writeTimeoutMs: 2000` — one `addBulk` is one round trip (a few ms locally even for 512 jobs); two
 *   seconds only passes when Redis is a black hole (a half-open connection).
 * - `maxAttempts: 10`, `initialBackoffMs: 250`, `maxBackoffMs: 10000` — a retry budget of roughly
 *   20–45 s (full jitter), so a Redis restart or fail-over loses nothing. While Redis is not connected
 *   a write fails at once (nothing is queued in ioredis), so attempts cost nothing.
 */
export const BULL_PROCESSOR_DEFAULTS: Readonly<Partial<SinkProcessorOptions>> = Object.freeze({
  writeTimeoutMs: 2000,
  maxAttempts: 10,
  initialBackoffMs: 250,
  maxBackoffMs: 10_000,
});

/** @deprecated The same as {@link BULL_PROCESSOR_DEFAULTS} (dispatcher settings, not the sink's own options). */
export const BULL_SINK_DEFAULTS = BULL_PROCESSOR_DEFAULTS;

/** `getQueueToken(name)` of `@nestjs/bull` / `@nestjs/bull-shared` 10–12, without importing them. */
export function bullQueueToken(name: string): string {
  return name ? `BullQueue_${name}` : 'BullQueue_default';
}
