/**
 * The sink host: the entry of the worker thread an `OffloadedSink` starts. It builds the sink from
 * the module and plain options in `workerData`, runs the writes the request thread posts (one
 * reply per write, partial failures by index), and shuts the sink down when asked. Nothing here
 * counts items: the request thread's dispatcher does, so its accounting holds across the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorMessage } from '../core/error-message';
import type { SinkItem } from '../core/items/deferred-item.interface';
import type { DeferredSink, SinkItemFailure } from '../core/sink.interface';
import type { FromHost, HostItemFailure, SinkHostData, ToHost } from '../sinks/offload/host-protocol';
import { failureCode } from '../sinks/kit/failure-codes';
import { throttledReport } from '../sinks/kit/throttled-report';
import { buildSink } from './build-sink';
import { threadCpuMs } from './thread-cpu';

const data = workerData as SinkHostData;
/** Least time between two reports of unhandled rejections in the worker. */
const WARNING_INTERVAL_MS = 10_000;
const port = parentPort;
const writes = new Map<number, AbortController>();
let endDrain: () => void = () => undefined;
const drained = new Promise<void>((resolve) => (endDrain = resolve));

function send(message: FromHost): void {
  port?.postMessage(message);
}

/** A write's reply, with this thread's CPU time so far (the request thread reports it in `stats()`). */
function reply(message: Extract<FromHost, { type: 'result' | 'error' }>): void {
  message.cpuMs = threadCpuMs();
  send(message);
}

/** What a failure says, read from the failure and, where it is silent, from a `SinkWriteError` of any copy of the library (the user's module may import another build). */
function retryInfo(error: unknown, failure: Partial<SinkItemFailure> = {}): { retryable: boolean; retryAfterMs?: number; code?: string } {
  const e = error as { name?: unknown; retryable?: unknown; retryAfterMs?: unknown; code?: unknown } | null;
  const typed = e !== null && typeof e === 'object' && e.name === 'SinkWriteError';
  const info: { retryable: boolean; retryAfterMs?: number; code?: string } = {
    retryable: failure.retryable ?? (typed && typeof e.retryable === 'boolean' ? e.retryable : true),
  };
  const retryAfterMs = failure.retryAfterMs ?? (typed && typeof e.retryAfterMs === 'number' ? e.retryAfterMs : undefined);
  // as the pipeline reads a failure in-process: the code on the error, its cause's, a connection error's
  const code = failure.code ?? (typed && e.code !== undefined ? String(e.code) : undefined) ?? failureCode(error);
  if (retryAfterMs !== undefined) info.retryAfterMs = retryAfterMs;
  if (code !== undefined) info.code = code;
  return info;
}

async function write(sink: DeferredSink<SinkItem>, id: number, batch: readonly SinkItem[], attempt: number): Promise<void> {
  const controller = new AbortController();
  writes.set(id, controller);
  const failed: HostItemFailure[] = [];
  const kept: SinkItem[] = [];
  const at: number[] = [];
  batch.forEach((item, index) => {
    try {
      sink.validate?.(item);
      kept.push(item);
      at.push(index);
    } catch (error) {
      failed.push({ index, message: errorMessage(error), retryable: false });
    }
  });
  try {
    const result = kept.length > 0 ? await sink.write(kept, { signal: controller.signal, attempt }) : undefined;
    for (const failure of result?.failed ?? []) {
      failed.push({ index: at[failure.index], message: errorMessage(failure.error), ...retryInfo(failure.error, failure) });
    }
    const duplicates = result?.duplicates?.map((index) => at[index]);
    reply({ type: 'result', id, failed, duplicates, retryAfterMs: failed.length > 0 ? result?.retryAfterMs : undefined });
  } catch (error) {
    const info = retryInfo(error);
    const message = errorMessage(error);
    if (failed.length === 0) reply({ type: 'error', id, message, ...info });
    else reply({ type: 'result', id, failed: [...failed, ...at.map((index) => ({ index, message, ...info }))], retryAfterMs: info.retryAfterMs });
  } finally {
    writes.delete(id);
  }
}

async function shutdown(sink: DeferredSink<SinkItem>): Promise<void> {
  endDrain();
  try {
    await sink.shutdown?.();
  } catch (error) {
    send({ type: 'warning', message: `sink "${data.name}" failed to shut down in its worker thread: ${errorMessage(error)}` });
  }
  send({ type: 'closed' });
}

async function main(): Promise<void> {
  // Reported, never fatal: the first at once, then at most one report (with the count) per interval.
  process.on(
    'unhandledRejection',
    throttledReport(WARNING_INTERVAL_MS, (unhandled, reason: unknown) => {
      const count = unhandled === 1 ? '' : ` (${unhandled} so far)`;
      send({ type: 'warning', message: `sink "${data.name}" in its worker thread: unhandled rejection (ignored)${count}: ${errorMessage(reason)}` });
    }),
  );
  let sink: DeferredSink<SinkItem>;
  try {
    const warn = (message: string) => send({ type: 'warning', message });
    sink = await buildSink(data, { warn });
    // The worker's sink owns its clients (made from plain options): nothing of the app's to resolve or hold.
    await sink.attach?.({ drain: () => drained, resolve: () => undefined, holdOpen: () => ({ closed: false }), providers: () => [], warn });
  } catch (error) {
    send({ type: 'failed-to-start', message: errorMessage(error) });
    return;
  }
  port?.on('message', (message: ToHost) => {
    if (message.type === 'write') void write(sink, message.id, JSON.parse(message.batch) as SinkItem[], message.attempt);
    else if (message.type === 'abort') writes.get(message.id)?.abort(Object.assign(new Error(message.message), message.code === undefined ? {} : { code: message.code }));
    else if (message.type === 'shutdown') void shutdown(sink);
  });
  send({ type: 'ready', kinds: sink.kinds });
}

void main();
