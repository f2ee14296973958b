import type { CorrelationOptions } from '../../core/correlation-options.interface';
import type { DeadLetterHandler } from '../../core/dead-letter.interface';
import type { DeadLetterOptions } from './dead-letter-options.interface';
import type { DeferredKind, RunWhen, SinkKind, SinkTarget } from '../../core/items/deferred-item.interface';
import type { CallbackRunnerOptions } from '../../pipeline/callbacks/callback-runner.options';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import type { SpoolOptions } from '../../spool';

/**
 * A disk spool (the `spool` option): every item accepted for a sink is appended to segment files under
 * `dir` before it is queued, and removed once the sink confirmed it (or it was dead-lettered); what a
 * crash or kill -9 left is delivered first at the next start. A kill -9 loses at most the items accepted
 * in the last `syncIntervalMs`. See docs/durability.md.
 */
export interface DeferredSpoolOptions extends SpoolOptions {
  /**
   * Directory of the spool, created if missing. Module-wide (`spool`), each sink gets its own
   * subdirectory named after it; per sink (`sinkOptions[name].spool`), this directory is the sink's.
   * One process per directory: give each replica its own (a second process fails at bootstrap).
   */
  dir: string;
}

/** Per-sink settings (`sinkOptions[name]`): the dispatcher's, and the sink's spool. */
export interface DeferredSinkOptions extends Partial<SinkProcessorOptions> {
  /** This sink's disk spool, over the module's `spool`; `false` for none. Default: the module's `spool`. */
  spool?: DeferredSpoolOptions | false;
}

/**
 * Which sink each kind of item goes to, by sink name — or to several, a copy to each (fan-out:
 * `metric: ['prometheus', 'opentelemetry']`): each copy is accepted, delivered, retried or
 * dead-lettered by its own sink, so the accounting identity holds per sink, and the totals of
 * `stats()` count every copy.
 */
export interface DeferredRouting {
  /** Sink(s) for jobs. Default: `routing.default`. */
  job?: SinkTarget;
  /** Sink(s) for log records. Default: `routing.default`. */
  log?: SinkTarget;
  /** Sink(s) for metric points. Default: `routing.default`. */
  metric?: SinkTarget;
  /** Sink(s) for kinds not named above. Default: for each kind, the first of `sinks` that takes it (see `DeferredSink.kinds`). */
  default?: SinkTarget;
}

/**
 * Options of `DeferredWorkModule.forRoot()` / `forRootAsync()`. Every field is optional; the
 * defaults are listed on each and applied in one place (`resolveOptions`).
 */
export interface DeferredWorkModuleOptions extends Partial<SinkProcessorOptions> {
  /** Where items go. Default: one `MemorySink` named `memory`. Names must be unique; `callbacks` is reserved. */
  sinks?: DeferredSink[];
  /**
   * Which sink takes each kind. Default: every kind to `routing.default`, itself, for each kind, the
   * first sink that takes it. Routing a kind to a sink that does not take it fails at bootstrap.
   */
  routing?: DeferredRouting;
  /**
   * Dispatcher settings for one sink, by name, over the globals and the sink's own `defaults`.
   * (`sinkOptions.callbacks` is still read for the callback runner — `maxQueueSize`, `maxAttempts`,
   * the backoffs, and `writeTimeoutMs` as its `timeoutMs` — but `callbacks` is the option to use.)
   */
  sinkOptions?: Record<string, DeferredSinkOptions>;
  /**
   * A crash-durable disk spool for every sink (each in `<dir>/<sink name>`; a sink can opt out with
   * `sinkOptions[name].spool: false`, or have its own). At-least-once across kill -9 and restarts: items
   * not yet confirmed by their sink are delivered after the next start, before new ones. A spooled sink
   * never dead-letters for a retryable failure unless you set `maxAttempts` (for it, or globally; a
   * sink's own default does not count): an item that used up its tries goes to the back of the spool. Callbacks
   * (`run(fn)`) are never spooled. Defaults of the rest: `maxBytes` 256 MiB per sink, `syncIntervalMs`
   * 200, `segmentBytes` 8 MiB. See docs/durability.md. Default: none.
   */
  spool?: DeferredSpoolOptions | false;
  /**
   * The runner of `run(fn)` callbacks: each callback runs as its own task, at most `concurrency` at
   * once, with its own timeout. Defaults: `{ concurrency: 2048, maxQueueSize: 16384, timeoutMs: 5000,
   * maxAttempts: 1, initialBackoffMs: 100, maxBackoffMs: 5000 }`. The global dispatcher settings
   * (`maxQueueSize`, `writeTimeoutMs`, …) do not apply to callbacks.
   */
  callbacks?: Partial<CallbackRunnerOptions>;
  /** Default `when` per kind. Default: `{ job: 'success', callback: 'success', log: 'always', metric: 'always' }`. */
  when?: Partial<Record<DeferredKind, RunWhen>>;
  /**
   * Make the injectable `DeferredWork` and the injected handles (`@InjectDeferredQueue()`, …) find the
   * current request anywhere in its call chain, through an async context: the app's nestjs-cls or
   * OpenTelemetry context when it runs one, else an `AsyncLocalStorage` of the library's. On Node 20 the
   * first `AsyncLocalStorage.run` enables promise hooks for the whole process, which measured 10–25%
   * more CPU per request on every route (an app running nestjs-cls or OpenTelemetry pays it already);
   * `@Deferred()` and the handles as handler parameters (`@Deferred.queue()`, …) need no async context.
   * Default `auto`: on when an injected deferred handle is in use, off otherwise.
   */
  asyncContext?: boolean | 'auto';
  /**
   * Response-time insight for `@AfterResponse()` routes: measure the time until the handler returned
   * and the time from then until the response finished (serialisation, compression, writing), emit
   * both as deferred metrics `http.server.handler_ms` and `http.server.send_ms` tagged with `route`,
   * `method` and `status`, and sum them per route in `stats().routes`. Default `false`; a route can
   * override it with `@AfterResponse({ timing })`.
   */
  timing?: boolean;
  /** How long application shutdown waits for pending items, in ms. Default `5000`. */
  shutdownTimeoutMs?: number;
  /**
   * Drain on a bare stop signal: when the process gets `SIGTERM` or `SIGINT` and nothing else listens
   * for it (no `app.enableShutdownHooks()`, no handler of the app's own; looked at when the signal
   * arrives), log one line, stop the HTTP server accepting connections, let the requests in flight
   * finish, drain within `shutdownTimeoutMs`, then raise the signal again so that the process ends by
   * it (status 143 after `SIGTERM`, 130 after `SIGINT`). A second signal during the drain ends it at
   * once. The app's own shutdown hooks (`onModuleDestroy`, `beforeApplicationShutdown`,
   * `onApplicationShutdown`) do not run on this path: `app.enableShutdownHooks()` runs them, and this
   * library drains there. `false` leaves the signal to Node, which ends the process at once, losing
   * what is pending. Default `true`.
   */
  drainOnSignal?: boolean;
  /** Largest serialised size of one item's payload (job data, log fields, metric tags), in bytes. Default `1048576` (1 MiB, 2^20). */
  maxItemBytes?: number;
  /**
   * Most bytes of items held in memory over every sink together (each sink within its own
   * `maxQueueBytes`), counted as `maxQueueBytes` counts them. Past it, new items go to a sink's spool
   * when it has one, else they are dropped and counted (reason `queue-full`). Default `134217728` (128 MiB).
   */
  maxTotalQueueBytes?: number;
  /**
   * Where dead letters go. The object form says where they are kept (to list, redrive and purge them
   * through `DeferredWork`) and where they are forwarded; see `DeadLetterOptions` and docs/dead-letters.md.
   * The short forms forward them: a function, or the name of a sink that receives their items through
   * its own queue (with its retries; its own dead letters are not forwarded again). Default: kept in a
   * file store under `<spool.dir>/.dead-letters` when the module-wide `spool` is set, in memory
   * otherwise; forwarded nowhere; one warning per 30 s is logged.
   */
  deadLetter?: DeadLetterHandler | string | DeadLetterOptions;
  /** How many recent dead letters `DeferredWork.deadLetters()` keeps in memory (beside the store). Default `100`. */
  deadLetterCapacity?: number;
  /**
   * Which request and trace each item came from, carried on the item as `correlation` (`requestId`,
   * `traceId`, `spanId`): a request id from a header or a function, and the active OpenTelemetry span.
   * `false` turns it off. Default `{ openTelemetry: 'auto' }`: trace ids when `@opentelemetry/api` is
   * installed and a span is active, no request id.
   */
  correlation?: CorrelationOptions | false;
}

/** Options fixed when the module is imported (they decide which providers exist). */
export interface DeferredWorkModuleExtras {
  /** Make the module global. Default `true`. */
  isGlobal?: boolean;
  /**
   * Register `DeferredWorkInterceptor` as an `APP_INTERCEPTOR` for every route. Default `auto`: only
   * when `asyncContext` or `timing` is on in `forRoot()` (with `forRootAsync()`, say `true` yourself
   * if they are). Routes using `@Deferred()` need no interceptor, and `@AfterResponse()` binds it
   * to the decorated routes that do; any Nest interceptor costs its request pipeline on every route.
   */
  registerInterceptor?: boolean;
}
