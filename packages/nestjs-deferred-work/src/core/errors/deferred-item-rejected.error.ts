/**
 * Why an item was refused before it was accepted (not serialisable, too large, malformed).
 * Rejected items are counted in `stats().rejected` and logged; they never throw into a handler.
 */
export class DeferredItemRejectedError extends Error {
  override readonly name = 'DeferredItemRejectedError';

  constructor(
    /** A short description of the item, e.g. `job "send" on queue "mail"`. */
    readonly item: string,
    problem: string,
    fix: string,
  ) {
    super(`DeferredWork rejected ${item}: ${problem}. ${fix}`);
  }
}
