/**
 * Thrown at bootstrap when `DeferredWorkModule` options are invalid. The message names the option
 * and says how to fix it.
 */
export class DeferredWorkConfigError extends Error {
  override readonly name = 'DeferredWorkConfigError';

  constructor(
    /** The offending option's path, e.g. `maxQueueSize` or `routing.job`. */
    readonly option: string,
    problem: string,
    fix: string,
  ) {
    super(`DeferredWorkModule: invalid option "${option}": ${problem}. ${fix}`);
  }
}
