import type { SinkItem } from '../core/items/deferred-item.interface';
import type { DeferredSink } from '../core/sink.interface';
import { bullWorkerSink } from '../sinks/bull/bull.worker-sink';
import { bullMqWorkerSink } from '../sinks/bullmq/bullmq.worker-sink';
import { HttpSink } from '../sinks/http/http.sink';
import type { HttpSinkOptions } from '../sinks/http/http-sink.options';
import type { BuiltinSinkName, SinkHostData } from '../sinks/offload/host-protocol';

type Factory = (options: never) => unknown;

/** The built-in sinks' factories, bundled with the worker (no module to load). */
const BUILTIN: Record<BuiltinSinkName, Factory> = {
  http: (options: HttpSinkOptions) => new HttpSink(options),
  bull: bullWorkerSink,
  bullmq: bullMqWorkerSink,
};

/** A class (native, or compiled to a function whose prototype has `write`): built with `new`. */
function isClass(value: Function): boolean {
  return /^class[\s{]/.test(Function.prototype.toString.call(value)) || typeof (value.prototype as { write?: unknown } | undefined)?.write === 'function';
}

/** The export named `name` of a loaded module, seeing through CommonJS interop (`exports.default`). */
function exportOf(mod: Record<string, unknown>, name: string): unknown {
  const direct = mod[name];
  if (name !== 'default') return direct ?? (mod.default as Record<string, unknown> | undefined)?.[name];
  const inner = (direct as { default?: unknown } | undefined)?.default;
  return typeof direct === 'function' ? direct : (inner ?? direct);
}

/** Builds the sink `data` describes: a built-in one, or the export of the user's module. */
export async function buildSink(data: SinkHostData, host: { warn(message: string): void }): Promise<DeferredSink<SinkItem>> {
  let factory: unknown;
  let what: string;
  if ('builtin' in data.source) {
    factory = BUILTIN[data.source.builtin];
    what = `the built-in ${data.source.builtin} sink`;
  } else {
    const mod = (await import(data.source.url)) as Record<string, unknown>;
    factory = exportOf(mod, data.source.export);
    what = `export "${data.source.export}" of ${data.source.url}`;
    if (typeof factory !== 'function') {
      throw new Error(`${what} is ${factory === undefined ? 'missing' : `a ${typeof factory}`}, not a class or function (the module exports: ${Object.keys(mod).join(', ') || 'nothing'})`);
    }
  }
  const build = factory as Function;
  const sink = (isClass(build) ? Reflect.construct(build, [data.options, host]) : await build(data.options, host)) as DeferredSink<SinkItem> | undefined;
  if (!sink || typeof sink.write !== 'function') throw new Error(`${what} did not return a sink (an object with write(batch, context))`);
  return sink;
}
