/**
 * Throw this from a sink's `write` to say whether a failed batch is worth retrying and when.
 * Any other thrown error counts as retryable with the dispatcher's own backoff.
 */
export class SinkWriteError extends Error {
  override readonly name = 'SinkWriteError';
  /** `false`: do not retry (the batch is dead-lettered at once). Default `true`. */
  readonly retryable: boolean;
  /** Wait at least this long before retrying, in ms (from `Retry-After`, for example). */
  readonly retryAfterMs?: number;

  constructor(message: string, options: { retryable?: boolean; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryable = options.retryable ?? true;
    this.retryAfterMs = options.retryAfterMs;
  }
}
