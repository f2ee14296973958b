import type { SinkProcessorOptions } from '../../core/sink.interface';
import type { ModuleRefLike } from '../kit/app-client';

export type { ModuleRefLike } from '../kit/app-client';

/** A queue as every queue sink needs it: named. */
export interface NamedQueue {
  readonly name: string;
}

/**
 * Whether a job sent to a queue now would reach Redis: `up`; `down` while the client is
 * (re)connecting (sending would park the command in ioredis' offline queue); `closed` for good.
 */
export type QueueState = 'up' | 'down' | 'closed';

/**
 * Options every queue sink takes (Bull, BullMQ); all optional. With none, a job's queue is the one the
 * app registered with `BullModule.registerQueue({ name })`, found by its injection token when the job is
 * first written: no second Redis connection.
 */
export interface QueueSinkOptions<Q extends NamedQueue> {
  /** Sink name used by routing (`routing.job`, `@AfterResponse({ sinks })`, a job's `sink`). Default: `'bull'` / `'bullmq'`. */
  name?: string;
  /**
   * @deprecated Not needed: the sink finds the registered queues through the app itself. Still
   * accepted: when given, queues are looked up with `moduleRef.get(queueToken(name), { strict: false })`.
   */
  moduleRef?: ModuleRefLike;
  /**
   * Queue instances to use directly, by queue name, or an array keyed by each `queue.name`. These are
   * looked up before the app's registered queues. The sink never closes them: close them after the
   * app's shutdown. Default: none (only registered queues).
   */
  queues?: Readonly<Record<string, Q>> | readonly Q[];
  /**
   * The injection token of the queue registered under `name`. Default: what the Nest integration's
   * `getQueueToken(name)` returns (`` `BullQueue_${name}` ``). Pass `getQueueToken` itself, or your own function if you register
   * queues under custom tokens.
   */
  queueToken?: (name: string) => string | symbol;
  /**
   * The Nest integration closes its queues in their `onApplicationShutdown` hook, and Nest runs the
   * `onApplicationShutdown` hooks of a module registering queues *before* those of a global module
   * such as `DeferredWorkModule`: the drain would then meet closed queues. When `true`, from bootstrap
   * on, every queue the sink may write to — the `queues` given and every queue registered in the app
   * (found by its `queueToken`) — is held open: its shutdown hook and its `close()` (and
   * `disconnect()`) first await the library's drain (bounded by `shutdownTimeoutMs`), then close as
   * before, whoever calls them. A queue first met later, even during shutdown, is held from then on.
   * Default `true`.
   */
  drainBeforeQueueClose?: boolean;
  /**
   * Opt-in, for telemetry-like queues whose handlers are cheap and idempotent: each write adds the
   * deferred jobs of one queue and job name as packs of up to `maxItems`, instead of one job each (in
   * the order of each pack's first job; a write holds at most `maxBatchSize` items). A packed
   * job costs the client (and Redis) about what one job does, so the process spends a fraction of the
   * CPU per deferred job. The worker receives `job.data` as `PackedJobData`
   * (`{ deferredWorkPacked: 1, items: [{ id, data, correlation? }] }`); read any job with
   * `unpackJob(job)`, which returns a one-item list for a job that was not packed (one deferred alone
   * in its write, or one with job options of its own: those are never packed).
   *
   * Trade-offs: the queue counts, retries, fails and shows packs, not items — a handler that throws
   * retries its whole pack, so handlers must tolerate an item twice (dedupe by its `id`, which is
   * the same on every retry, spool replay and redrive). A pack's `jobId` is derived from its items'
   * ids: a pack sent again as it was is added once; an item sent again with other items (after part of
   * a write failed, a spool requeue, a redrive) goes out in a new pack and can reach the worker twice.
   * `true` means `{ maxItems: 100 }`.
   * Default: off (`false`), one job per deferred job.
   */
  packJobs?: boolean | PackJobsOptions;
}

/** Settings of a queue sink's `packJobs` option. */
export interface PackJobsOptions {
  /** Most deferred jobs in one packed job, 2–10,000 (a write holds at most the sink's `maxBatchSize` items). Default `100`. */
  maxItems?: number;
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
 * - `initialBackoffMs: 250` — while Redis is not connected a write fails at once (nothing is queued in
 *   ioredis), so the first retries need not come sooner.
 *
 * Retries last the dispatcher's `maxRetryDurationMs` (5 minutes), with one probe at a time while
 * Redis is down (backoff up to `maxBackoffMs`, 5 s): a Redis restart or fail-over loses nothing.
 */
export const QUEUE_PROCESSOR_DEFAULTS: Readonly<Partial<SinkProcessorOptions>> = Object.freeze({
  writeTimeoutMs: 2000,
  initialBackoffMs: 250,
});
