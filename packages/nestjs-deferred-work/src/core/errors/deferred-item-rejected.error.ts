/**
 * Why an item was refused before it was accepted (not serialisable, too large, malformed).
 * Rejected items are counted in `stats().rejected` and logged; they never throw into a handler.
 */
export class DeferredItemRejectedError extends Error {
  override readonly name = 'DeferredItemRejectedError';

  constructor(
    /** A short description of the item, e.g. `job "send" on queue "mail"`. */
    readonly item: string,
    /** What is wrong with it, e.g. `its data cannot be serialised to JSON (…)`. */
    readonly problem: string,
    /** How to fix it. */
    readonly fix: string,
  ) {
    super(`DeferredWork rejected ${item}: ${problem}. ${fix}`);
  }

  /** The message, naming where the item was deferred (e.g. `OrdersController.create()`) when `origin` is given. */
  messageFrom(origin: string | undefined): string {
    return origin === undefined ? this.message : `DeferredWork rejected ${this.item} (deferred in ${origin}): ${this.problem}. ${this.fix}`;
  }
}
