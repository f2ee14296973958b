import type { CorrelationOptions, ResolvedCorrelation } from '../../core/correlation-options.interface';
import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';

/** `correlation` with its defaults, checked; `undefined` for `false`. */
export function resolveCorrelation(option: CorrelationOptions | false | undefined): ResolvedCorrelation | undefined {
  if (option === false) return undefined;
  if (option === undefined) return { requestId: requestIdOf, openTelemetry: 'auto' };
  if (option === null || typeof option !== 'object') {
    throw new DeferredWorkConfigError('correlation', `expected an object or false, got ${JSON.stringify(option)}`, "Pass correlation: { requestIdHeader: 'x-request-id' }, or false.");
  }
  const { requestIdHeader, requestId, openTelemetry = 'auto' } = option;
  if (requestIdHeader !== undefined && (typeof requestIdHeader !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(requestIdHeader))) {
    throw new DeferredWorkConfigError('correlation.requestIdHeader', `${JSON.stringify(requestIdHeader)} is not a header name`, "Pass a header name such as 'x-request-id'.");
  }
  if (requestId !== undefined && typeof requestId !== 'function') {
    throw new DeferredWorkConfigError('correlation.requestId', 'expected a function of the request', 'Pass requestId: (req) => req.id, or use requestIdHeader.');
  }
  if (requestIdHeader !== undefined && requestId !== undefined) {
    throw new DeferredWorkConfigError('correlation', 'both requestIdHeader and requestId are given', 'Give one: the header to read, or the function that finds the id.');
  }
  if (openTelemetry !== true && openTelemetry !== false && openTelemetry !== 'auto') {
    throw new DeferredWorkConfigError('correlation.openTelemetry', `expected true, false or 'auto', got ${JSON.stringify(openTelemetry)}`, "Leave it out for 'auto'.");
  }
  // Neither given: the id pino-http and Fastify give every request (`req.id`).
  return { requestIdHeader: requestIdHeader?.toLowerCase(), requestId: requestIdHeader === undefined ? (requestId ?? requestIdOf) : undefined, openTelemetry };
}

/** The default request id: `req.id`, as pino-http (Express) and Fastify set it, when it is a string or a number. */
export function requestIdOf(request: unknown): string | undefined {
  const id = (request as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : undefined;
}
