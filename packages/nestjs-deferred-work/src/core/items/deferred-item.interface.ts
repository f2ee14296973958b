/** The kinds of work a handler can defer. */
export type DeferredKind = 'job' | 'log' | 'metric' | 'callback';

/** Kinds that are delivered to a sink (callbacks run in-process). */
export type SinkKind = Exclude<DeferredKind, 'callback'>;

/**
 * When an item runs, judged by the request's outcome once the response has finished.
 * - `success`: the response status is below 400 (and the client did not abort).
 * - `failure`: the status is 400 or above, or the client aborted.
 * - `always`: in every case.
 */
export type RunWhen = 'always' | 'success' | 'failure';

/** Log levels accepted by {@link DeferredScope.log}; the same names as Nest's `LogLevel`. */
export type DeferredLogLevel = 'fatal' | 'error' | 'warn' | 'log' | 'info' | 'debug' | 'verbose';

/**
 * Where an item goes: a sink's name, or several (fan-out: a copy of the item to each, each accepted,
 * delivered or dead-lettered by its own sink; the totals of `stats()` count every copy).
 */
export type SinkTarget = string | readonly string[];

/** Options every item accepts. */
export interface DeferredItemOptions {
  /** When the item runs. Default per kind: jobs and callbacks `success`; logs and metrics `always`. */
  when?: RunWhen;
  /** The sink (or sinks) this item goes to, overriding the route and module routing. Default: the routing's. */
  sink?: SinkTarget;
}

/** Options of a log record. */
export interface DeferredLogOptions extends DeferredItemOptions {
  /**
   * The record's context (Nest's `context`, pino's `context` field), e.g. the calling class's name.
   * Default: the logger sink's `context` option.
   */
  context?: string;
}

/** Options of a metric point. */
export interface DeferredMetricOptions extends DeferredItemOptions {
  /** `'add'`: on a gauge, add the value instead of setting it (see `MetricItem.op`). Default: by type. */
  op?: 'add';
}

/** Options passed through to the queue with a job (Bull's `JobOptions` are a superset). */
export interface DeferredJobOptions extends DeferredItemOptions {
  /** Attempts the queue itself makes to process the job (Bull `attempts`). Default: the queue's. */
  attempts?: number;
  /** Backoff between the queue's own attempts (Bull `backoff`). Default: the queue's. */
  backoff?: number | { type: string; delay?: number };
  /** Delay before the job may be processed, in ms (Bull `delay`). Default: the queue's (none). */
  delay?: number;
  /** Idempotency key: a second job with the same id is not added (Bull `jobId`). Default: the item's id (`dw-<uuid>`). */
  jobId?: string | number;
  /** Remove the job once completed (Bull `removeOnComplete`). Default: the queue's. */
  removeOnComplete?: boolean | number;
  /** Remove the job once it failed for good (Bull `removeOnFail`). Default: the queue's. */
  removeOnFail?: boolean | number;
  /** Job priority (Bull `priority`, 1 is highest). Default: the queue's (none). */
  priority?: number;
  /** Add to the right (newest first) end of the queue (Bull `lifo`). Default: the queue's (`false`). */
  lifo?: boolean;
  /** Milliseconds after which the queue fails the job (Bull `timeout`). Default: the queue's (none). */
  timeout?: number;
  /** Stack trace lines kept for a failed job (Bull `stackTraceLimit`). Default: the queue's. */
  stackTraceLimit?: number;
  /** Keep the job's data unparsed for the processor (Bull `preventParsingData`). Default: the queue's (`false`). */
  preventParsingData?: boolean;
  /** Any other option the queue understands (e.g. Bull's `debounce`), passed through unchanged. */
  [option: string]: unknown;
}

/**
 * Which request and trace an item came from (the `correlation` module option): one object shared by
 * every item of a request. Sinks carry it: the HTTP sink as `correlation` on each item, the logger
 * sink as fields, Bull and BullMQ jobs as `job.opts.correlation`.
 */
export interface ItemCorrelation {
  /** The request's id: the configured header's value, or what the configured function returned. */
  requestId?: string;
  /** Trace id (32 hex digits) of the OpenTelemetry span active when the request's scope opened. */
  traceId?: string;
  /** Span id (16 hex digits) of that span. */
  spanId?: string;
  /** That span's trace flags (1: sampled), so a record written later in its context is sampled alike. */
  traceFlags?: number;
}

interface ItemBase {
  /** When the item runs (resolved: never undefined once collected). */
  when: RunWhen;
  /** Sink override (one, or several for a copy to each), if any. */
  sink?: SinkTarget;
  /** Epoch milliseconds when the handler created the item. */
  createdAt: number;
  /** The request and trace it came from, when correlation is on and there is something to carry. */
  correlation?: Readonly<ItemCorrelation>;
  /**
   * The item's stable id (`dw-<uuid>`), given once when the dispatcher accepts it and kept with it
   * everywhere after: across retries, in a worker thread (offloaded sinks), on disk (the spool) and on
   * its dead letter. Every item a sink receives carries one, so a sink can make its write idempotent
   * and a receiver can drop the copy that a retry after a lost reply or a spool replay delivers again:
   * Bull and BullMQ use it as the `jobId` when the job has none, the HTTP sink sends it per item and in
   * `Idempotency-Key`, broker sinks as the message id. Unset only on an item not yet accepted.
   */
  id?: string;
}

/** A job for a queue (delivered by the Bull sink, or any sink that takes jobs). */
export interface JobItem extends ItemBase {
  kind: 'job';
  queue: string;
  name: string;
  data: unknown;
  opts?: Omit<DeferredJobOptions, 'when' | 'sink'>;
}

/** A structured log record. */
export interface LogItem extends ItemBase {
  kind: 'log';
  level: DeferredLogLevel;
  message: string;
  fields?: Record<string, unknown>;
  /** The record's context (e.g. the calling class), when given. */
  context?: string;
}

/** A metric point. */
export interface MetricItem extends ItemBase {
  kind: 'metric';
  name: string;
  value: number;
  tags?: Record<string, string>;
  /**
   * How the value applies to a gauge: `'add'` adds it (a deferred `gauge.inc()` / `dec()`) instead of
   * setting the gauge to it. Other instruments apply values by their type. Default: by type.
   */
  op?: 'add';
}

/** An arbitrary async callback, run in-process after the response. */
export interface CallbackItem extends ItemBase {
  kind: 'callback';
  /** Receives an `AbortSignal` that fires when the callback's timeout expires or on shutdown. */
  fn: (signal: AbortSignal) => unknown;
}

/** Anything that can be deferred. */
export type DeferredItem = JobItem | LogItem | MetricItem | CallbackItem;

/** What a sink receives: never callbacks. */
export type SinkItem = JobItem | LogItem | MetricItem;
