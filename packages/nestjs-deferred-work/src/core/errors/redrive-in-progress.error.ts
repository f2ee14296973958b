/**
 * Thrown by `DeferredWork.redriveDeadLetters()` when a redrive is already running: one at a time, so
 * that two cannot hand the same dead letter back twice.
 */
export class RedriveInProgressError extends Error {
  override readonly name = 'RedriveInProgressError';

  constructor(
    /** When the running redrive started (epoch ms). */
    readonly startedAt: number,
    done: number,
    total: number,
  ) {
    super(
      `A redrive of dead letters is already running (started ${new Date(startedAt).toISOString()}, ${done} of ${total} handed back). ` +
        'Wait for its promise to resolve, then redrive again.',
    );
  }
}
