/**
 * Throw this from a sink's `write` (or attach it to a failed entry) to say whether a failure is worth
 * retrying, when, and with which code from the server. Any other error counts as retryable with the
 * dispatcher's own backoff.
 */
export class SinkWriteError extends Error {
  override readonly name = 'SinkWriteError';
  /** `false`: do not retry (dead-lettered at once). Default `true`. */
  readonly retryable: boolean;
  /** Wait at least this long before retrying, in ms (from `Retry-After`, for example). Default: the dispatcher's backoff. */
  readonly retryAfterMs?: number;
  /**
   * The server's own code for the failure (a SQLSTATE such as `23502`, a MySQL errno, a Redis reply
   * prefix such as `WRONGTYPE`, an AWS error code, an HTTP status). Kept on the dead letter and in
   * `stats().sinks[name].lastErrorCode`. Default: none.
   */
  readonly code?: string;

  constructor(message: string, options: { retryable?: boolean; retryAfterMs?: number; code?: string | number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryable = options.retryable ?? true;
    this.retryAfterMs = options.retryAfterMs;
    if (options.code !== undefined) this.code = String(options.code);
  }
}
