import type * as http from 'node:http';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { Route } from './http-routes';
import { parseRetryAfter } from './http-wire';

/**
 * Statuses worth another try: the OTLP/HTTP exporter's list, and 409 — what a receiver that honours
 * `Idempotency-Key` answers while a request with the same key is still being processed (every POST of
 * this sink carries one). Everything else that is not 2xx is final.
 */
const RETRYABLE_STATUSES = new Set([409, 429, 502, 503, 504]);
/**
 * Statuses that blame the body (malformed, too large, unprocessable): when a POST of several items
 * gets one, one of its items may be the cause, so the POST is split to find it.
 */
export const CONTENT_STATUSES = new Set([400, 413, 422]);

/** `undefined` for 2xx; otherwise the error the status calls for, with the status as its `code`. */
export function statusError(sinkName: string, route: Route, res: http.IncomingMessage, items: number): SinkWriteError | undefined {
  const status = res.statusCode ?? 0;
  if (status >= 200 && status < 300) return undefined;
  const reason = res.statusMessage ? ` ${res.statusMessage}` : '';
  const what = `HttpSink "${sinkName}": POST ${route.display} answered ${status}${reason}`;
  if (RETRYABLE_STATUSES.has(status)) {
    const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
    const wait = retryAfterMs === undefined ? '' : `, Retry-After ${retryAfterMs} ms`;
    return new SinkWriteError(`${what} (retryable${wait}).`, { retryable: true, retryAfterMs, code: status });
  }
  const hint =
    status >= 300 && status < 400
      ? ' Redirects are not followed: configure the final URL.'
      : status === 413
        ? items === 1
          ? ' This item alone is too large for the receiver: make it smaller, or raise the receiver\'s body limit.'
          : ' The body is too large for the receiver: lower maxBatchSize for this sink or enable gzip.'
        : status === 401 || status === 403
          ? ' Check the credentials in "headers".'
          : CONTENT_STATUSES.has(status) && items === 1
            ? ' The receiver refused this item alone.'
            : '';
  return new SinkWriteError(`${what} (not retried).${hint}`, { retryable: false, code: status });
}
