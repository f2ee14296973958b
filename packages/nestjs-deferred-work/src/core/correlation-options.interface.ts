/** The `correlation` module option: where a request's ids come from. */
export interface CorrelationOptions {
  /**
   * Request header carrying the request id (e.g. `x-request-id`), read when the request's scope
   * opens. Default: none (then `requestId`'s default applies).
   */
  requestIdHeader?: string;
  /**
   * Or a function of the request (Express `req`, Fastify request) returning its id. A function that
   * throws or returns something other than a string gives no id. Default, when `requestIdHeader` is not
   * given either: `req.id` — the id pino-http (nestjs-pino) sets on Express requests and Fastify sets on
   * every request — so deferred records carry the same request id as the app's own log lines.
   */
  requestId?: (request: unknown) => string | undefined;
  /**
   * Carry the trace and span ids of the OpenTelemetry span active when the request's scope opens,
   * and run `run(fn)` callbacks inside that request's OpenTelemetry context (spans they start join
   * the request's trace). `'auto'`: when `@opentelemetry/api` can be loaded (without an SDK no span
   * is ever active, and nothing is added). `true`: fail the bootstrap if it cannot. Default `'auto'`.
   */
  openTelemetry?: boolean | 'auto';
}

/** `correlation` with its defaults applied; `undefined` when turned off (`correlation: false`). */
export interface ResolvedCorrelation {
  /** Lower-cased. */
  requestIdHeader?: string;
  requestId?: (request: unknown) => string | undefined;
  openTelemetry: boolean | 'auto';
}
