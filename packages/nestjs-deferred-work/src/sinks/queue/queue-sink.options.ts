import type { ModuleRef } from '@nestjs/core';
import type { SinkProcessorOptions } from '../../core/sink.interface';

/** Something that finds a provider by token anywhere in the app: Nest's `ModuleRef`. */
export type ModuleRefLike = Pick<ModuleRef, 'get'>;

/** A queue as every queue sink needs it: named. */
export interface NamedQueue {
  readonly name: string;
}

/**
 * Whether a job sent to a queue now would reach Redis: `up`; `down` while the client is
 * (re)connecting (sending would park the command in ioredis' offline queue); `closed` for good.
 */
export type QueueState = 'up' | 'down' | 'closed';

/** Options every queue sink takes (Bull, BullMQ). Give `moduleRef`, `queues`, or both. */
export interface QueueSinkOptions<Q extends NamedQueue> {
  /** Sink name used by routing (`routing.job`, `@AfterResponse({ sinks })`, a job's `sink`). */
  name?: string;
  /**
   * The app's `ModuleRef` (inject it in `DeferredWorkModule.forRootAsync({ inject: [ModuleRef], useFactory })`).
   * A job's queue is looked up on first use with `moduleRef.get(queueToken(name), { strict: false })`,
   * so the queues registered with `BullModule.registerQueue({ name })` are reused: no second Redis
   * connection. Also lets the sink find every registered queue at bootstrap (see `drainBeforeQueueClose`).
   */
  moduleRef?: ModuleRefLike;
  /**
   * Queue instances to use directly, by queue name, or an array keyed by each `queue.name`. These are
   * looked up before `moduleRef`. The sink never closes them: close them after the app's shutdown.
   */
  queues?: Readonly<Record<string, Q>> | readonly Q[];
  /**
   * The injection token of the queue registered under `name`. Default: what the Nest integration's
   * `getQueueToken(name)` returns. Pass `getQueueToken` itself, or your own function if you register
   * queues under custom tokens.
   */
  queueToken?: (name: string) => string | symbol;
  /**
   * The Nest integration closes its queues in their `onApplicationShutdown` hook, and Nest runs the
   * `onApplicationShutdown` hooks of a module registering queues *before* those of a global module
   * such as `DeferredWorkModule`: the drain would then meet closed queues. When `true`, from bootstrap
   * on, every queue the sink may write to — the `queues` given and, with `moduleRef`, every queue
   * registered in the app (found by its `queueToken`) — gets its shutdown hook wrapped so that it first
   * awaits the library's drain (bounded by `shutdownTimeoutMs`), then closes. A queue first met later,
   * even during shutdown, is held from then on. Queues without such a hook (created by the app itself)
   * are left alone: close them after `app.close()`. Default `true`.
   */
  drainBeforeQueueClose?: boolean;
}

/** What a queue sink says about its library in messages. */
export interface QueueFlavor {
  /** The sink's class, e.g. `BullSink`. */
  sinkClass: string;
  /** The queue library, e.g. `Bull`. */
  library: string;
  /** Its npm package, e.g. `bull`. */
  packageName: string;
  /** The Nest integration, e.g. `@nestjs/bull`. */
  nestPackage: string;
  /** The method that adds a batch, e.g. `addBulk`. */
  addMethod: string;
  /** The default sink name. */
  defaultName: string;
  /** `getQueueToken(name)` of the Nest integration. */
  defaultToken: (name: string) => string | symbol;
  /** When `value` is a queue of the other library this sink is often confused with: what to use instead. */
  otherLibrary?: (value: unknown) => string | undefined;
}

/**
 * Dispatcher settings of a queue sink (Bull, BullMQ), over the module's globals (the module's
 * `sinkOptions[name]` wins):
 * - `writeTimeoutMs: 2000` — one batch add is one round trip (a few ms locally even for 512 jobs);
 *   two seconds only pass when Redis is a black hole (a half-open connection).
 * - `maxAttempts: 10`, `initialBackoffMs: 250`, `maxBackoffMs: 10000` — a retry budget of roughly
 *   20–45 s (full jitter), so a Redis restart or fail-over loses nothing. While Redis is not connected
 *   a write fails at once (nothing is queued in ioredis), so attempts cost nothing.
 */
export const QUEUE_PROCESSOR_DEFAULTS: Readonly<Partial<SinkProcessorOptions>> = Object.freeze({
  writeTimeoutMs: 2000,
  maxAttempts: 10,
  initialBackoffMs: 250,
  maxBackoffMs: 10_000,
});
