/**
 * The injection tokens of the deferred handles, and the names the app's code asks for. A handle
 * decorator (`@InjectDeferredQueue('mail')`) records its name when the class it decorates is loaded;
 * `DeferredWorkModule.forRoot()` provides a handle for every name recorded by then, and
 * `DeferredWorkModule.forFeature()` for names of modules loaded later.
 */

/** Names asked for by handle decorators so far, by kind of handle. */
export const handlesInUse = {
  queues: new Set<string>(),
  clients: new Set<string>(),
  metrics: new Set<string>(),
  pinoLoggers: new Set<string>(),
};

/** The token of the deferred handle of the queue registered as `name`. */
export function deferredQueueToken(name: string): string {
  return `DeferredQueue_${name}`;
}

/** The token of the deferred handle of the microservice client registered as `name`. */
export function deferredClientToken(name: string): string {
  return `DeferredClient_${name}`;
}

/** The token of the deferred handle of the metric `name`. */
export function deferredMetricToken(name: string): string {
  return `DeferredMetric_${name}`;
}

/** The token of the deferred `PinoLogger`-style logger of `context`. */
export function deferredPinoLoggerToken(context: string): string {
  return `DeferredPinoLogger_${context}`;
}

/** Whether any injected handle is in use: then requests need an async context for it to find them. */
export function anyHandleInUse(): boolean {
  return handlesInUse.queues.size > 0 || handlesInUse.clients.size > 0 || handlesInUse.metrics.size > 0 || handlesInUse.pinoLoggers.size > 0;
}
