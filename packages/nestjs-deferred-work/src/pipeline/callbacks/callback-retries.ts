import type { DeadLetterReason } from '../../core/dead-letter.interface';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { retryDelayMs } from '../processor/backoff';
import { sleepUnlessAborted } from '../sleep';
import type { CallbackRunnerOptions } from './callback-runner.options';
import type { CallbackTask } from './running-callbacks';

/**
 * The callback runner's retries: whether a failed callback runs again (its error allows it, it has
 * attempts left, shutdown's deadline has not passed), and its wait meanwhile, outside the queue: the
 * backoff (`initialBackoffMs` doubling to `maxBackoffMs`, with full jitter), cut short when shutdown's
 * deadline passes (`stop` aborted), after which the callback is given up on instead.
 */
export class CallbackRetries {
  /** Callbacks waiting for a retry. */
  waiting = 0;

  constructor(
    private readonly options: CallbackRunnerOptions,
    /** Aborted when shutdown's deadline passes. */
    private readonly stop: AbortSignal,
    private readonly on: {
      /** Its wait is over: it runs again (before the callbacks queued meanwhile). */
      due(task: CallbackTask): void;
      /** Its wait was cut by shutdown's deadline. */
      givenUp(task: CallbackTask): void;
      /** Last line of defence: an error thrown after a wait. */
      error(error: unknown): void;
    },
  ) {}

  /** Why a failed callback is dead-lettered rather than run again; `undefined` when it is to be retried (`retry`). */
  verdict(task: CallbackTask, error: unknown): DeadLetterReason | undefined {
    const retryable = !(error instanceof SinkWriteError) || error.retryable;
    if (!retryable) return 'not-retryable';
    if (task.attempts >= this.options.maxAttempts || this.stop.aborted) return this.stop.aborted ? 'shutdown' : 'attempts-exhausted';
    return undefined;
  }

  /** Waits out the callback's backoff, then hands it to `due` (or, past shutdown's deadline, `givenUp`). */
  retry(task: CallbackTask): void {
    this.waiting++;
    this.retryLater(task).catch((e: unknown) => this.on.error(e));
  }

  private async retryLater(task: CallbackTask): Promise<void> {
    // Waits, or less if shutdown's deadline passes. Never keeps the process alive by itself.
    await sleepUnlessAborted(retryDelayMs(task.attempts, { ...this.options, maxRetryAfterMs: 0 }), this.stop);
    this.waiting--;
    if (this.stop.aborted) this.on.givenUp(task);
    else this.on.due(task);
  }
}
