import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import type { RequestTracker } from '../capture/request-tracker';
import { settlesBy } from '../core/settle';
import type { Dispatcher } from '../pipeline/dispatcher';
import { serverlessShutdownBudgetMs } from '../serverless/platform';

/**
 * The drain on a bare stop signal (the `drainOnSignal` option). When the process gets `SIGTERM` or
 * `SIGINT` and nothing else listens for it — no `app.enableShutdownHooks()`, no handler of the app's
 * own, decided when the signal arrives — Node's default action would end the process at once and lose
 * every deferred item still pending. Instead, every registered application stops taking connections,
 * waits for its requests in flight and drains within its `shutdownTimeoutMs`; then the signal is raised
 * again with the library's listener removed, so that the process ends by it (status 143 or 130), as it
 * would have. The app's own shutdown hooks (`onModuleDestroy`, `beforeApplicationShutdown`,
 * `onApplicationShutdown`) do not run on this path.
 */

/** The signals drained when nothing else listens for them. */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** One of {@link STOP_SIGNALS}. */
export type StopSignal = (typeof STOP_SIGNALS)[number];

/**
 * How long past the longest `shutdownTimeoutMs` the signal is raised again whatever the drain is doing
 * (each sink's own `shutdown()` may take up to a second past the deadline).
 */
export const HARD_DEADLINE_MARGIN_MS = 2000;

/** How often a closing HTTP server's idle keep-alive connections are closed, in ms. */
const IDLE_SWEEP_MS = 10;

/** One running application as the drain on a stop signal sees it. */
export interface StopSignalTarget {
  /** Its `shutdownTimeoutMs`: how long its drain may take, from the signal on. */
  readonly timeoutMs: number;
  /** Stops taking connections, waits for the requests in flight and drains, all by `deadline` (epoch ms). */
  drain(deadline: number): Promise<unknown>;
  /** Logs the line that says what happens (the first registered application's logger). */
  log(message: string): void;
}

/** What the process-wide registry holds (on `globalThis`: the ES module and CommonJS builds share it). */
interface Registry {
  /** The applications a stop signal drains. */
  readonly apps: Set<StopSignalTarget>;
  /** The one listener for every signal of {@link STOP_SIGNALS}, while an application is registered. */
  listener: ((signal: NodeJS.Signals) => void) | undefined;
  /** While a drain runs: ends it, raising `signal` (once). */
  ending: ((signal: NodeJS.Signals) => void) | undefined;
}

const REGISTRY = Symbol.for('nestjs-deferred-work.stop-signals');

function registry(): Registry {
  const holder = globalThis as unknown as Record<symbol, Registry | undefined>;
  return (holder[REGISTRY] ??= { apps: new Set(), listener: undefined, ending: undefined });
}

/**
 * Registers an application for the drain on a stop signal: the first one installs the process's one
 * listener per signal (however many applications run, e.g. in a test runner: no
 * `MaxListenersExceededWarning`). Returns what unregisters it (idempotent); the last one removes the
 * listeners, so that a signal raised again later (Nest's `enableShutdownHooks()` path) ends the process.
 */
export function drainOnStopSignals(app: StopSignalTarget): () => void {
  const shared = registry();
  shared.apps.add(app);
  if (!shared.listener) {
    const listener = (signal: NodeJS.Signals) => onStopSignal(signal, listener);
    shared.listener = listener;
    for (const signal of STOP_SIGNALS) process.on(signal, listener);
  }
  let registered = true;
  return () => {
    if (!registered) return;
    registered = false;
    shared.apps.delete(app);
    if (shared.apps.size === 0) removeListeners(shared);
  };
}

/** The library's listener: drains when it is the only one handling `signal`, else leaves it to the others. */
function onStopSignal(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): void {
  const shared = registry();
  if (handledElsewhere(signal, listener)) return; // enableShutdownHooks(), or the app's own handler
  if (shared.ending) return shared.ending(signal); // a second signal during the drain: end now
  const apps = [...shared.apps];
  const start = Date.now();
  const longest = Math.max(0, ...apps.map((app) => app.timeoutMs));
  let hard: NodeJS.Timeout | undefined;
  const end = (raise: NodeJS.Signals) => {
    if (!hard) return; // ended already
    clearTimeout(hard);
    hard = undefined;
    removeListeners(shared);
    process.kill(process.pid, raise);
  };
  // Kept referenced: the process must end by the signal raised again, never with status 0 because the
  // event loop emptied mid-drain (a retry's backoff timer does not hold it).
  hard = setTimeout(() => end(signal), longest + HARD_DEADLINE_MARGIN_MS);
  shared.ending = end;
  apps[0]?.log(drainMessage(signal, longest, apps.length));
  void Promise.allSettled(apps.map((app) => Promise.resolve().then(() => app.drain(start + app.timeoutMs)))).then(() => end(signal));
}

/** The one line logged when a stop signal is drained. */
export function drainMessage(signal: string, timeoutMs: number, apps: number): string {
  const which = apps > 1 ? ` of the ${apps} applications` : '';
  return (
    `${signal} received and no shutdown hooks are enabled: the HTTP server${apps > 1 ? 's stop' : ' stops'} accepting connections, ` +
    `deferred work${which} drains for up to ${timeoutMs} ms, then the process exits with ${signal}. Call app.enableShutdownHooks() ` +
    "to run the app's own shutdown hooks too (they do not run on this path), or set drainOnSignal: false to leave the signal to Node."
  );
}

function removeListeners(shared: Registry): void {
  const listener = shared.listener;
  shared.listener = undefined;
  shared.ending = undefined;
  if (listener) for (const signal of STOP_SIGNALS) process.removeListener(signal, listener);
}

/**
 * Whether a listener other than `own` handles `signal`. signal-exit's listeners (v3 and v4, loaded by
 * many tools) are not counted: they raise the signal again only when they are alone, which they are
 * once the library's listener is removed.
 */
export function handledElsewhere(signal: NodeJS.Signals, own: unknown): boolean {
  const others = process.listeners(signal).filter((listener) => listener !== own).length;
  return others > signalExitListeners();
}

/** How many listeners per signal signal-exit has installed (its emitters' `count`, v3 and v4). */
function signalExitListeners(): number {
  const owner = process as unknown as Record<string | symbol, { count?: unknown } | undefined>;
  let count = 0;
  for (const emitter of [owner.__signal_exit_emitter__, owner[Symbol.for('signal-exit emitter')]]) {
    if (typeof emitter?.count === 'number') count += emitter.count;
  }
  return count;
}

/** The part of a Node HTTP server (Express's, Fastify's) the drain uses. */
export interface DrainedServer {
  readonly listening: boolean;
  close(callback?: (error?: Error) => void): unknown;
  closeIdleConnections?(): void;
  prependListener(event: 'request', listener: (request: IncomingMessage, response: ServerResponse) => void): unknown;
}

/**
 * Stops `server` taking connections (`server.close()`) and keeps the connections left from carrying
 * more requests: every response from now on says `Connection: close`, and idle keep-alive connections
 * are closed as they turn idle. Requests in flight complete. Resolves once every connection has ended.
 */
export function stopAccepting(server: DrainedServer): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const ended = new Promise<void>((resolve) => server.close(() => resolve()));
  server.prependListener('request', closeAfterResponse);
  server.closeIdleConnections?.();
  const sweep = setInterval(() => server.closeIdleConnections?.(), IDLE_SWEEP_MS);
  sweep.unref();
  void ended.then(() => clearInterval(sweep));
  return ended;
}

function closeAfterResponse(_request: IncomingMessage, response: ServerResponse): void {
  if (response instanceof ServerResponse) response.shouldKeepAlive = false;
}

/** What one application's drain on a stop signal uses. */
export interface SignalDrainParts {
  /** The HTTP server to stop, if the application has one. */
  server?: DrainedServer;
  /** Resolves once no decorated request is open, or after `ms`. */
  whenNoneOpen(ms: number): Promise<unknown>;
  /** The dispatcher's shutdown (idempotent: the application's own close awaits the same). */
  shutdown(deadline: number): Promise<unknown>;
}

/**
 * One application's drain: its HTTP server stops taking connections, its requests in flight finish
 * (their items are dispatched as their responses end) and their connections end, then the dispatcher
 * drains and shuts down — everything by `deadline`. What it could not deliver is dead-lettered
 * (`shutdown`) and reported by the dispatcher's shutdown. The sinks deliver all along.
 */
export async function drainApplication(parts: SignalDrainParts, deadline: number): Promise<void> {
  const connectionsEnded = parts.server ? stopAccepting(parts.server) : undefined;
  await Promise.all([settlesBy(connectionsEnded, deadline), parts.whenNoneOpen(Math.max(0, deadline - Date.now()))]);
  await parts.shutdown(deadline);
}

/**
 * The drain target of one application of the module, for {@link drainOnStopSignals}: its logger, its
 * dispatcher and open requests, and the Node server under its HTTP adapter.
 */
export function applicationTarget(
  logger: Logger,
  dispatcher: Dispatcher,
  requests: RequestTracker,
  adapterHost: HttpAdapterHost | undefined,
): StopSignalTarget {
  return {
    // In serverless mode on Lambda (SIGTERM, then SIGKILL 500 ms later) a shorter budget than shutdownTimeoutMs.
    get timeoutMs() {
      return Math.min(dispatcher.options.shutdownTimeoutMs, serverlessShutdownBudgetMs() ?? Number.POSITIVE_INFINITY);
    },
    log: (message) => logger.warn(message),
    drain: (deadline) =>
      drainApplication(
        {
          server: httpServerOf(adapterHost),
          whenNoneOpen: (ms) => requests.whenNoneOpen(ms),
          shutdown: (end) => dispatcher.shutdown(end),
        },
        deadline,
      ),
  };
}

/** The Node server under the application's HTTP adapter, if it has one that can be closed. */
function httpServerOf(adapterHost: HttpAdapterHost | undefined): DrainedServer | undefined {
  let server: unknown;
  try {
    server = adapterHost?.httpAdapter?.getHttpServer?.();
  } catch {
    return undefined; // no HTTP server (a standalone application context)
  }
  const candidate = server as Partial<DrainedServer> | undefined;
  return typeof candidate?.close === 'function' && typeof candidate.prependListener === 'function' ? (candidate as DrainedServer) : undefined;
}
