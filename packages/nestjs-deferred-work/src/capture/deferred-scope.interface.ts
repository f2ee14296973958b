import type { DeferredItemOptions, DeferredJobOptions, DeferredLogLevel, DeferredLogOptions, DeferredMetricOptions } from '../core/items/deferred-item.interface';

/**
 * What a handler uses to defer work. `@Deferred()` injects one bound to the current request;
 * the injectable `DeferredWork` service implements it too.
 */
export interface DeferredScope {
  /**
   * Queue a job (`queue` is the Bull queue name when the Bull sink takes it). Default `when`: `success`.
   * Returns the item's id (`dw-<uuid>`): its `jobId` in Bull and BullMQ unless you give one.
   */
  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): string;
  /** Record a log line. Default `when`: `always`. Returns the item's id. */
  log(level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredLogOptions): string;
  /** Record a metric point. Default `when`: `always`. Returns the item's id. */
  metric(name: string, value: number, tags?: Record<string, string>, opts?: DeferredMetricOptions): string;
  /**
   * Run a callback in-process after the response has finished, as its own task (see the `callbacks`
   * module option). A callback that declares a parameter — `run((signal) => …)` — gets an
   * `AbortSignal`, aborted when its timeout (`callbacks.timeoutMs`, default 5 s) expires or at
   * shutdown's deadline; one declared without parameters gets none (creating a signal costs ~5 µs per
   * callback), so a callback written with rest parameters or `arguments` must name the parameter.
   * Timeouts apply either way. Default `when`: `success`. Not retried by default.
   */
  run(fn: (signal: AbortSignal) => unknown, opts?: Omit<DeferredItemOptions, 'sink'>): void;
}
