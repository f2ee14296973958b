/** Thrown by `DeferredWork`'s dead-letter methods when `deadLetter.store` is `false`. */
export class DeadLetterStoreMissingError extends Error {
  override readonly name = 'DeadLetterStoreMissingError';

  constructor() {
    super(
      "No dead-letter store is configured (deadLetter.store is false): there is nothing to list, redrive or purge. " +
        "Set deadLetter: { store: 'file' } (durable) or 'memory'; DeferredWork.deadLetters() still shows the recent ones.",
    );
  }
}
