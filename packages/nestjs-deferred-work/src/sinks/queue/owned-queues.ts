import type { DeferredSink } from '../../core/sink.interface';
import { throttledReport } from '../kit/throttled-report';

/** A queue the sink host created and must close. */
export interface ClosableQueue {
  close(): Promise<unknown>;
}

/**
 * In the worker thread, the queues belong to the sink: once the sink has shut down, close them
 * (each on its own; one that fails to close does not keep the others open).
 */
export function closingQueues<S extends DeferredSink<never>>(sink: S, queues: readonly ClosableQueue[]): S {
  const shutdown = sink.shutdown?.bind(sink);
  sink.shutdown = async () => {
    await shutdown?.();
    await Promise.allSettled(queues.map((queue) => queue.close()));
  };
  return sink;
}

/** `options` without its `undefined` entries (which some libraries take as "unset the default"). */
export function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** How long the sink host waits at start for its new queues to connect before taking writes anyway. */
const CONNECT_WAIT_MS = 2000;

/**
 * Waits (bounded) for the queues the worker created to connect, so the first writes after bootstrap
 * do not fail as "not connected". Redis being down does not hold the start up: the writes fail fast
 * and are retried, as with queues the app owns.
 */
export async function connected(ready: Array<Promise<unknown>>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(ready),
    new Promise((resolve) => {
      timer = setTimeout(resolve, CONNECT_WAIT_MS);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

/** What the sink host gives a factory besides its options. */
export interface SinkHostContext {
  /** Logs a warning on the request thread (the library's logger). */
  warn(message: string): void;
}

/** Least time between two reports of one queue's connection errors. */
const ERROR_REPORT_INTERVAL_MS = 10_000;

/**
 * Reports the queues' `error` events (a Redis outage makes ioredis emit one per reconnect attempt)
 * through `warn`: the first at once, then at most one line with the count per interval — instead of
 * the library's raw stack traces on stderr.
 */
export function reportQueueErrors(queues: ReadonlyArray<{ name: string; on(event: 'error', fn: (error: Error) => void): unknown }>, warn: (message: string) => void): void {
  for (const queue of queues) {
    queue.on(
      'error',
      throttledReport(ERROR_REPORT_INTERVAL_MS, (count, error: Error) => warn(`queue "${queue.name}" in the sink's worker thread: ${error.message}${count > 1 ? ` (${count} errors so far)` : ''}`)),
    );
  }
}
