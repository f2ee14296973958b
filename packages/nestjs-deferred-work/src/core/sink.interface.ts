import type { DeferredItem, SinkKind } from './items/deferred-item.interface';

/** Passed to every {@link DeferredSink.write}. */
export interface SinkWriteContext {
  /**
   * Aborted when the write exceeds `writeTimeoutMs` or shutdown's deadline passes. Honour it. Made
   * when first read (a write that never reads it is timed out all the same); read after the abort, it
   * is already aborted, with the same reason.
   */
  signal: AbortSignal;
  /** 1 for a first try, 2 for the first retry, and so on. */
  attempt: number;
}

/**
 * One item of a batch that did not go through. Where a field is left out, the pipeline reads it from
 * `error` when that is a `SinkWriteError` (its `retryable`, `retryAfterMs` and `code`).
 */
export interface SinkItemFailure {
  /** Index of the item in the batch passed to `write`. */
  index: number;
  /** Why; logged (message only) and kept on the dead letter. */
  error: unknown;
  /** `false` when retrying cannot help (e.g. the item was refused as invalid). Default: `error.retryable` of a `SinkWriteError`, else `true`. */
  retryable?: boolean;
  /** The server asked to wait this long before this item's next try, in ms. Default: `error.retryAfterMs` of a `SinkWriteError`, else none. */
  retryAfterMs?: number;
  /** The server's code for the failure (SQLSTATE, errno, Redis prefix, AWS code). Default: `error.code` of a `SinkWriteError`, else none. */
  code?: string;
}

/**
 * What `write` may resolve with to report a partial failure. Resolving with nothing means every
 * item of the batch was delivered; throwing or rejecting means none was (see `SinkWriteError`).
 */
export interface SinkWriteResult {
  /** The items that failed; only these are retried or dead-lettered. */
  failed?: SinkItemFailure[];
  /**
   * Indexes of items the server already had (same item id: a retry after a lost reply, or a spool
   * replay) and skipped. They count as delivered, and in `stats().sinks[name].duplicates`.
   */
  duplicates?: number[];
  /** The receiver asked to wait this long before the next try (e.g. `Retry-After`). */
  retryAfterMs?: number;
}

/**
 * A destination for deferred items. The dispatcher calls `write` with one batch at a time, with a
 * timeout, and retries what failed. After a timeout it aborts `signal` and waits up to a second more
 * for the write to settle before the next one starts: a sink that honours its signal never has two
 * writes in flight.
 *
 * A sink must not keep a reference to the batch array after `write` settles.
 */
export interface DeferredSink<T extends DeferredItem = DeferredItem> {
  /** Unique name, used by routing (`routing`, `@AfterResponse({ sinks })`, item `sink`). */
  readonly name: string;
  /**
   * The kinds of item this sink takes. Routing another kind to it fails at bootstrap, and an item
   * of another kind sent to it (its own `sink` option) is rejected and counted. Default: every kind.
   */
  readonly kinds?: readonly SinkKind[];
  /** Deliver a batch. Called only after the responses that produced the items finished. */
  write(batch: readonly T[], context: SinkWriteContext): Promise<void | SinkWriteResult>;
  /**
   * Dispatcher settings this sink wants by default (e.g. a callback runner does not retry).
   * The module's `sinkOptions[name]` wins over these, and these over the module's globals.
   */
  readonly defaults?: Partial<SinkProcessorOptions>;
  /**
   * Checks one item when it is handed to the dispatcher, before it is accepted. Throw an `Error`
   * saying what is wrong and how to fix it: the item is then rejected and counted
   * (`stats().rejected`) instead of failing at every write. Optional; keep it cheap.
   */
  validate?(item: T): void;
  /**
   * Called once at bootstrap, before any write, with what the library offers sinks: the app's
   * providers by injection token (`resolve`: the queue, client or pool the app registered), a way to
   * keep such a client open until the drain ends (`holdOpen`), and the drain itself. May return a promise: bootstrap waits for it, and
   * a rejection fails the bootstrap with its message (e.g. a worker thread that cannot build its sink).
   * Optional.
   */
  attach?(context: SinkAttachContext): void | Promise<void>;
  /** Where the sink's own work runs, when not on the request thread (`stats().sinks[name].host`). Optional. */
  hostStats?(): SinkHostStats;
  /** Release resources; called once, after the last write, on application shutdown. */
  shutdown?(): Promise<void> | void;
}

/** What a sink running off the request thread reports of its host (see `OffloadedSink`). */
export interface SinkHostStats {
  /** Where the sink's client work runs. */
  thread: 'worker';
  /** Whether the worker is running now (it starts at bootstrap and again after a crash, on the next write). */
  running: boolean;
  /**
   * Workers started after the first: after one stopped unexpectedly (crash, `process.exit`, out of
   * memory), was replaced for ignoring aborted writes, or failed to start (each retry counts).
   */
  restarts: number;
  /**
   * Writes still waiting for a worker when it stopped (some already given up on after their abort):
   * each was failed as retryable and retried by the dispatcher.
   */
  writesLostToRestarts: number;
  /**
   * Time the worker's event loop was busy, in ms, summed over every worker this sink started. Wall
   * time: on a machine with more runnable threads than cores it overstates the CPU the worker got
   * (see `cpuMs`).
   */
  activeMs: number;
  /**
   * CPU time of the workers this sink started, in ms, as of their last write: read by each worker
   * from Linux's `/proc/thread-self/schedstat`. `undefined` where that is not available (not Linux).
   * Unlike `activeMs`, it does not count time the thread was runnable but waiting for a core.
   */
  cpuMs?: number;
}

/** Passed to {@link DeferredSink.attach} at bootstrap. */
export interface SinkAttachContext {
  /**
   * Resolves once the deferred work pending now (and what callbacks defer meanwhile) has been
   * delivered, dropped or dead-lettered, bounded by `shutdownTimeoutMs`; during the application's
   * shutdown, once the shutdown's own drain has ended. Every caller waits for the same drain.
   */
  drain(): Promise<unknown>;
  /**
   * The app's provider registered under `token`, found anywhere in the app (as
   * `moduleRef.get(token, { strict: false })` would), or `undefined` when there is none. For sinks
   * that use what the app already registered: a queue, a microservice client, a pool, a registry.
   */
  resolve<T = unknown>(token: unknown): T | undefined;
  /**
   * Keeps a client of the app open until this sink has drained, whichever module closes it and in
   * whichever shutdown hook (`onModuleDestroy`, `beforeApplicationShutdown`, `onApplicationShutdown`):
   * its close methods (`end`, `quit`, `disconnect`, `destroy`, `close`, or `options.methods`) and the
   * Nest shutdown hooks on the instance first wait until every sink holding the client has delivered
   * what it holds (bounded by `shutdownTimeoutMs`; what is left then is kept by a spool, or
   * dead-lettered and reported by the shutdown) and closed, then close the client as before. Items
   * deferred to those sinks afterwards are dead-lettered as `closed`. Idempotent. Returns the client's
   * state (`closed` once its real close has started).
   */
  holdOpen(client: object, options?: HoldOpenOptions): HeldClient;
  /** The app's singleton providers, by injection token, as instantiated at bootstrap. */
  providers(): Iterable<{ token: unknown; instance: unknown }>;
  /** Logs a warning the way the library logs its own (Nest's `Logger`, context `DeferredWork`). */
  warn(message: string): void;
}

/** Options of {@link SinkAttachContext.holdOpen}. */
export interface HoldOpenOptions {
  /** The client's methods that close it. Default `['end', 'quit', 'disconnect', 'destroy', 'close']` (those it has). */
  methods?: readonly string[];
}

/** A client held open by {@link SinkAttachContext.holdOpen}. */
export interface HeldClient {
  /** Whether its real close has started (after the drain): nothing more can be sent through it. */
  readonly closed: boolean;
}

/** Dispatcher settings that can be set globally, per sink (`sinkOptions`) or by a sink (`defaults`). */
export interface SinkProcessorOptions {
  /**
   * Most items held for this sink (queued, in flight or waiting for a retry); beyond it new items are
   * dropped and counted. An optional cap by count: the byte budget (`maxQueueBytes`) bounds the queue
   * by default. Default: none.
   */
  maxQueueSize: number;
  /**
   * Most bytes of items held in memory for this sink: each item counts the serialised size of its
   * payload that the validator computes when it is deferred, plus 256 bytes for its fields. Beyond it
   * new items go to the sink's spool when it has one, else they are dropped and counted (reason
   * `queue-full`). The module's `maxTotalQueueBytes` bounds the sum over every sink.
   * Default `33554432` (32 MiB).
   */
  maxQueueBytes: number;
  /** Most items in one `write`. Default `512`. */
  maxBatchSize: number;
  /** Longest an item waits for more to batch with, in ms (the linger). Default `5`. */
  flushIntervalMs: number;
  /** Timeout of one `write`, in ms; its `signal` is aborted then. Default `5000`. */
  writeTimeoutMs: number;
  /**
   * How long an item whose write failed transiently (a refused or reset connection, a timeout, a 5xx,
   * throttling, a server starting up) is retried, in ms, counted from its first failure — or, for an
   * item that waited behind a failing write, from when the sink began failing or the item was
   * accepted, whichever is later. Then it is dead-lettered with reason `expired`. Failures the sink
   * calls permanent are dead-lettered at once. Default `300000` (5 minutes, as the OpenTelemetry
   * Collector's exporters).
   */
  maxRetryDurationMs: number;
  /**
   * An optional cap on the tries per item, the first included, before it is dead-lettered (reason
   * `attempts-exhausted`), whatever is left of `maxRetryDurationMs`; without it, the time budget ends
   * the retries. Default: none.
   */
  maxAttempts: number;
  /**
   * First retry delay in ms; doubles each retry, with full jitter, up to `maxBackoffMs`. While every
   * write fails, only the oldest batch is retried (a probe) and the rest wait in order. Default `100`.
   */
  initialBackoffMs: number;
  /** Ceiling of the retry delay in ms (a `retryAfterMs` from the sink may exceed it, up to `maxRetryAfterMs`). Default `5000`. */
  maxBackoffMs: number;
  /** Ceiling on a sink-requested `retryAfterMs`, in ms. Default `60000`. */
  maxRetryAfterMs: number;
}
