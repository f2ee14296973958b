import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';

/** Options of {@link OffloadedSink}. */
export interface OffloadedSinkOptions {
  /** Sink name used by routing (`routing`, `@AfterResponse({ sinks })`, an item's `sink`). Required. */
  name: string;
  /**
   * The module the worker thread loads to build the sink: an absolute path, a `file:` URL, or a
   * package name (resolved from the working directory). Relative paths are refused: pass
   * `require.resolve('./my.sink')`, `join(__dirname, 'my.sink.js')` or `new URL('./my.sink.js', import.meta.url)`.
   * The module must be JavaScript Node can load as it is (compiled, not TypeScript).
   */
  module: string | URL;
  /**
   * The module's export that builds the sink: a class (`new Export(options)`) or a function
   * (`Export(options)`, may be async) returning a `DeferredSink`. Default `'default'`.
   */
  export?: string;
  /**
   * The argument of that class or function. Plain data only (it is copied to the worker by structured
   * clone): strings, numbers, booleans, plain objects, arrays, `Date`, `Map`, `Set`. Functions and class
   * instances (a queue, a client) are refused at construction. Default `undefined`.
   */
  options?: unknown;
  /**
   * The kinds of item the sink takes (checked at bootstrap against what the worker's sink declares).
   * Default: every kind (`job`, `log`, `metric`).
   */
  kinds?: readonly SinkKind[];
  /** Dispatcher settings for this sink (as a sink's own `defaults`); `sinkOptions[name]` wins. Default none. */
  defaults?: Partial<SinkProcessorOptions>;
  /**
   * A cheap check of each item on the request thread, when it is deferred: throw to reject it
   * (counted in `stats().rejected`). The worker's sink `validate` still runs in the worker, where a
   * refusal dead-letters the item. Default none.
   */
  validate?: (item: SinkItem) => void;
  /** How long the worker may take to load the module and build the sink, in ms. Default `10000`. */
  startTimeoutMs?: number;
  /** How long `shutdown` waits for the worker's sink to shut down before ending the thread, in ms. Default `5000`. */
  closeTimeoutMs?: number;
}

/** Defaults of {@link OffloadedSinkOptions}. */
export const OFFLOADED_SINK_DEFAULTS = Object.freeze({ export: 'default', startTimeoutMs: 10_000, closeTimeoutMs: 5_000 });
