import type { ModuleRef } from '@nestjs/core';
import type { SinkProcessorOptions } from '../sinks/deferred-sink.interface';

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

/** Something that finds a provider by token anywhere in the app: Nest's `ModuleRef`. */
export type ModuleRefLike = Pick<ModuleRef, 'get'>;

/** Options of {@link BullSink}. Give `moduleRef`, `queues`, or both. */
export interface BullSinkOptions {
  /** Sink name used by routing (`routing.job`, `@AfterResponse({ sinks })`, a job's `sink`). Default `'bull'`. */
  name?: string;
  /**
   * The app's `ModuleRef` (inject it in `DeferredWorkModule.forRootAsync({ inject: [ModuleRef], useFactory })`).
   * A job's queue is looked up on first use with `moduleRef.get(queueToken(name), { strict: false })`,
   * so the queues registered with `BullModule.registerQueue({ name })` are reused: no second Redis
   * connection. Also lets the sink make `@nestjs/bull` wait for the drain before it closes a queue
   * (see `drainBeforeQueueClose`).
   */
  moduleRef?: ModuleRefLike;
  /**
   * Queue instances to use directly, by queue name, or an array keyed by each `queue.name`. These are
   * looked up before `moduleRef`. The sink never closes them: close them after the app's shutdown.
   */
  queues?: Readonly<Record<string, BullQueueLike>> | readonly BullQueueLike[];
  /**
   * The injection token of the queue registered under `name`. Default `` `BullQueue_${name}` ``, which
   * is what `getQueueToken(name)` of `@nestjs/bull` 10, 11 and 12 (`@nestjs/bull-shared`) returns.
   * Pass `getQueueToken` itself, or your own function if you register queues under custom tokens.
   */
  queueToken?: (name: string) => string | symbol;
  /**
   * `@nestjs/bull` closes its queues in their `onApplicationShutdown` hook, and Nest runs the
   * `onApplicationShutdown` hooks of a module registering queues *before* those of a global module
   * such as `DeferredWorkModule`: the drain would then meet closed queues. When `true`, from bootstrap
   * on, every queue the sink may write to — the `queues` given and, with `moduleRef`, every Bull queue
   * registered in the app (found by its `queueToken`) — gets its shutdown hook wrapped so that it first
   * awaits the library's drain (bounded by `shutdownTimeoutMs`), then closes. A queue first met later,
   * even during shutdown, is held from then on. Queues without such a hook (created by the app itself)
   * are left alone: close them after `app.close()`. Default `true`.
   */
  drainBeforeQueueClose?: boolean;
}

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
export const BULL_SINK_DEFAULTS: Readonly<Partial<SinkProcessorOptions>> = Object.freeze({
  writeTimeoutMs: 2000,
  maxAttempts: 10,
  initialBackoffMs: 250,
  maxBackoffMs: 10_000,
});

/** `getQueueToken(name)` of `@nestjs/bull` / `@nestjs/bull-shared` 10–12, without importing them. */
export function bullQueueToken(name: string): string {
  return name ? `BullQueue_${name}` : 'BullQueue_default';
}
