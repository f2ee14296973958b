/** Options of the Lambda wrappers and of {@link registerLambdaExtension} (`nestjs-deferred-work/serverless`). */
export interface LambdaOptions {
  /**
   * How long before the invocation's deadline (the function's timeout) its deferred work stops: items
   * not delivered by then are expired — dead-lettered `expired`, or kept by their sink's spool when
   * the spool takes such items (`requeue`) — and the rest of the margin stores those dead letters and
   * releases the invocation. Between 50 ms and 10 minutes. Default `500`. A wrapper's own value holds
   * for its invocations, whether the extension or the wrapper sees an invocation first; left out, the
   * wrapper takes the extension's.
   */
  deadlineMarginMs?: number;
}

/** Options of {@link registerLambdaExtension}. */
export interface LambdaExtensionOptions extends LambdaOptions {
  /** The name the internal extension registers under (`Lambda-Extension-Name`). Default `'nestjs-deferred-work'`. */
  extensionName?: string;
}

/** Options of {@link enableVercelWaitUntil}. */
export interface VercelOptions {
  /**
   * How long a request's deferred work may run after its response, in ms: what was not delivered by
   * then is expired (dead-lettered `expired`, or kept by a spool that takes such items). Keep it below
   * the function's `maxDuration` less its slowest response. Between 100 ms and 15 minutes. Default `10000`.
   */
  budgetMs?: number;
}

/** The defaults of the serverless mode, in one place. */
export const SERVERLESS_DEFAULTS = Object.freeze({
  deadlineMarginMs: 500,
  extensionName: 'nestjs-deferred-work',
  budgetMs: 10_000,
  /**
   * A stop signal's drain in an environment with the internal extension registered: Lambda gives the
   * runtime 500 ms after its SIGTERM (a function with an internal extension) before SIGKILL.
   */
  shutdownMs: 300,
});

/** Checks a whole number of ms within bounds; `fallback` when left out. The error names the option and the fix. */
export function checkMs(fn: string, option: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(
      `${fn}: option "${option}" must be a whole number of milliseconds from ${min} to ${max}, got ${JSON.stringify(value)}. ` +
        `Pass a number in that range, or leave it out for ${fallback}.`,
    );
  }
  return value;
}
