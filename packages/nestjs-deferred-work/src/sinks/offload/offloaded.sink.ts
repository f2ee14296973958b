import { createRequire } from 'node:module';
import { isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import { isSinkKind } from '../../core/items/item-kinds';
import type { DeferredSink, SinkAttachContext, SinkHostStats, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import type { BuiltinSinkName, SinkSource } from './host-protocol';
import { OFFLOADED_SINK_DEFAULTS, type OffloadedSinkOptions } from './offloaded-sink.options';
import { checkPlainData } from './plain-data';
import { failuresOf, SinkHostThread } from './sink-host-thread';

/** Where the worker loads a user's sink module from: a `file:` URL, or a package name it cannot resolve here. */
function moduleUrl(prefix: string, module: unknown): string {
  if (module instanceof URL) {
    if (module.protocol !== 'file:') throw new SinkConfigError(`${prefix}: option "module" must be a file: URL, got ${module.protocol}`, 'module');
    return module.href;
  }
  if (typeof module !== 'string' || module === '') {
    throw new SinkConfigError(`${prefix}: option "module" is required: the absolute path, file: URL or package name of the module that builds the sink.`, 'module');
  }
  if (module.startsWith('file:')) return module;
  if (isAbsolute(module)) return pathToFileURL(module).href;
  if (module.startsWith('.')) {
    throw new SinkConfigError(
      `${prefix}: option "module" is a relative path ("${module}"), which the worker thread cannot resolve. Pass an absolute one: ` +
        "require.resolve('./my.sink'), join(__dirname, 'my.sink.js') or new URL('./my.sink.js', import.meta.url).",
      'module',
    );
  }
  try {
    return pathToFileURL(createRequire(join(process.cwd(), 'index.js')).resolve(module)).href;
  } catch (error) {
    throw new SinkConfigError(
      `${prefix}: option "module" "${module}" cannot be resolved from ${process.cwd()} (${errorMessage(error)}). ` +
        `Pass its absolute path or file: URL — for an ES-module-only package, import.meta.resolve('${module}').`,
      'module',
    );
  }
}

/**
 * A sink whose work runs in a worker thread, pino-transport style: the request thread only checks
 * items and hands each batch over (structured clone); the sink — its client library, serialisation,
 * compression and I/O — lives in the worker, built there from a module path and plain options
 * (`module`, `export`, `options`), never from live objects.
 *
 * Everything the dispatcher guarantees holds as for an in-process sink, because batching, retries,
 * timeouts, dead letters and the counters stay on the request thread: the worker only runs writes.
 * The worker starts at bootstrap (a sink that cannot be built fails the bootstrap with the reason);
 * when it stops unexpectedly, the writes it was running fail as retryable and are retried, and the
 * next write starts a new worker (`stats().sinks[name].host.restarts`). At shutdown, after the drain,
 * the worker's sink is shut down and the thread ended.
 *
 * For the built-in sinks use `HttpSink.offloaded()`, `BullSink.offloaded()` or `BullMqSink.offloaded()`.
 */
export class OffloadedSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds?: readonly SinkKind[];
  readonly defaults?: Partial<SinkProcessorOptions>;
  readonly validate?: (item: SinkItem) => void;
  private readonly thread: SinkHostThread;
  private readonly describe: string;
  private readonly builtin: boolean;
  /** Where the worker's warnings go: the library's logger once attached, `process.emitWarning` before. */
  private warn: (message: string) => void = (message) => process.emitWarning(message, { code: 'DEFERRED_WORK_SINK_HOST' });

  /**
   * @param builtin @internal Set by the built-in sinks' `offloaded()`: the worker builds that sink itself.
   */
  constructor(options: OffloadedSinkOptions, builtin?: BuiltinSinkName) {
    const prefix = `OffloadedSink${typeof options?.name === 'string' ? ` "${options.name}"` : ''}`;
    if (typeof options?.name !== 'string' || options.name === '') {
      throw new SinkConfigError(`${prefix}: option "name" is required (the name routing uses), e.g. { name: 'jobs', module, options }.`, 'name');
    }
    this.name = options.name;
    this.builtin = builtin !== undefined;
    const exportName = options.export ?? OFFLOADED_SINK_DEFAULTS.export;
    const source: SinkSource = builtin ? { builtin } : { url: moduleUrl(prefix, options.module), export: exportName };
    this.describe = builtin ? `the built-in ${builtin} sink` : `${String(options.module)} (export "${exportName}")`;
    checkPlainData(prefix, 'options', options.options);
    if (options.kinds !== undefined) {
      const bad = Array.isArray(options.kinds) ? options.kinds.find((kind) => !isSinkKind(kind)) : options.kinds;
      if (bad !== undefined || !Array.isArray(options.kinds)) {
        throw new SinkConfigError(`${prefix}: option "kinds" must be an array of 'job', 'log' and 'metric' (got ${JSON.stringify(bad)}).`, 'kinds');
      }
      this.kinds = Object.freeze([...options.kinds]);
    }
    if (options.defaults) this.defaults = options.defaults;
    if (options.validate) this.validate = options.validate;
    this.thread = new SinkHostThread(
      { name: this.name, source, options: options.options },
      {
        startTimeoutMs: options.startTimeoutMs ?? OFFLOADED_SINK_DEFAULTS.startTimeoutMs,
        closeTimeoutMs: options.closeTimeoutMs ?? OFFLOADED_SINK_DEFAULTS.closeTimeoutMs,
      },
      (message) => this.warn(message),
    );
  }

  /** At bootstrap: starts the worker and waits until it has built its sink; fails the bootstrap otherwise. */
  async attach(context?: SinkAttachContext): Promise<void> {
    if (context) this.warn = (message) => context.warn(message);
    let kinds: readonly SinkKind[] | undefined;
    try {
      ({ kinds } = await this.thread.start());
    } catch (error) {
      const why = errorMessage(error).replace(/\.$/, '');
      const fix = this.builtin
        ? 'Check its options (and that its client library is installed).'
        : 'Check that the module is JavaScript Node can load, that the export is a class or a function returning a sink, and its options.';
      throw new SinkConfigError(`OffloadedSink "${this.name}": the worker thread could not build its sink from ${this.describe}: ${why}. ${fix}`, 'module');
    }
    const missing = this.kinds && kinds ? this.kinds.filter((kind) => !kinds.includes(kind)) : [];
    if (missing.length > 0) {
      throw new SinkConfigError(
        `OffloadedSink "${this.name}": option "kinds" lists ${missing.join(', ')}, which the worker's sink does not take ` +
          `(it takes ${kinds?.join(', ')}). Remove them from "kinds".`,
        'kinds',
      );
    }
  }

  async write(batch: readonly SinkItem[], { signal, attempt }: SinkWriteContext): Promise<void | SinkWriteResult> {
    if (signal.aborted) throw signal.reason;
    let reply;
    try {
      reply = await this.thread.write(batch, attempt, signal);
    } catch (error) {
      if (error instanceof SinkWriteError) throw error;
      throw new SinkWriteError(`the worker thread of sink "${this.name}" could not start: ${errorMessage(error)}`);
    }
    // A reply that came after the signal aborted still counts: the worker did the write.
    if (reply.type === 'error') throw new SinkWriteError(reply.message, { retryable: reply.retryable, retryAfterMs: reply.retryAfterMs, code: reply.code });
    const failed = reply.failed && reply.failed.length > 0 ? failuresOf(reply.failed) : undefined;
    const duplicates = reply.duplicates && reply.duplicates.length > 0 ? reply.duplicates : undefined;
    if (!failed && !duplicates) return undefined;
    return { failed, duplicates, retryAfterMs: reply.retryAfterMs };
  }

  hostStats(): SinkHostStats {
    return this.thread.stats();
  }

  /** After the drain: shuts the worker's sink down (bounded by `closeTimeoutMs`) and ends the thread. */
  shutdown(): Promise<void> {
    return this.thread.close();
  }
}
