import type { CallbackItem } from '../../core/items/deferred-item.interface';

/** One accepted callback, through its attempts. */
export interface CallbackTask {
  item: CallbackItem;
  attempts: number;
  /** Acceptance order, for `flush()`. */
  seq: number;
  /** `performance.now()` when the current attempt started. */
  started: number;
}

/** What a callback's `AbortSignal` is aborted with when its time is up. */
export class CallbackTimeoutError extends Error {
  override readonly name = 'CallbackTimeoutError';
}

/**
 * The running callbacks, with their controller (only those that declared a `signal` parameter have
 * one), in the order they started — which, with one `timeoutMs` for all, is the order of their
 * deadlines — and one timer for all of them, armed for the oldest one's deadline.
 */
export class RunningCallbacks {
  private readonly live = new Map<CallbackTask, AbortController | undefined>();
  private timeoutTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    /** A running callback past its deadline (it must leave this set). */
    private readonly onTimeout: (task: CallbackTask, controller: AbortController | undefined) => void,
    /** An error thrown while timing callbacks out. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A callback started (its `started` set): watched for its deadline. */
  add(task: CallbackTask, controller: AbortController | undefined): void {
    this.live.set(task, controller);
    // One timer serves every running callback (a timer each cost an allocation and two list updates per callback).
    if (this.timeoutTimer === undefined) this.arm(this.timeoutMs);
  }

  /** Stops watching `task`; `false` when it was not running (timed out or cut by shutdown before). */
  delete(task: CallbackTask): boolean {
    return this.live.delete(task);
  }

  /** The running callbacks and their controllers, oldest first (a copy). */
  entries(): Array<[CallbackTask, AbortController | undefined]> {
    return [...this.live];
  }

  private arm(ms: number): void {
    this.timeoutTimer = setTimeout(() => this.checkTimeouts(), ms);
    this.timeoutTimer.unref();
  }

  /**
   * Times out every running callback past its deadline (oldest first), then re-arms for the oldest
   * left. The fired timer stays in `timeoutTimer` meanwhile, so callbacks started by the freed slots
   * do not arm a second one.
   */
  private checkTimeouts(): void {
    try {
      const now = performance.now();
      for (const [task, controller] of this.live) {
        if (task.started + this.timeoutMs > now) break;
        this.onTimeout(task, controller);
      }
    } catch (error) {
      this.onError(error);
    }
    this.timeoutTimer = undefined;
    const oldest = this.live.keys().next();
    if (!oldest.done) this.arm(Math.max(1, Math.ceil(oldest.value.started + this.timeoutMs - performance.now())));
  }
}
