import type { CallbackItem } from '../../core/items/deferred-item.interface';

/** One accepted callback, through its attempts. */
export interface CallbackTask {
  item: CallbackItem;
  attempts: number;
  /** Acceptance order, for `flush()`. */
  seq: number;
  /** `performance.now()` when the current attempt started. */
  started: number;
  /** Set while it runs, by `RunningCallbacks`: its signal's controller (only for a callback that declared a parameter). */
  controller: AbortController | undefined;
  /** Set while it runs, by `RunningCallbacks`: its neighbours in start order. */
  prev: CallbackTask | undefined;
  next: CallbackTask | undefined;
  /** Whether it is in `RunningCallbacks` now. */
  running: boolean;
}

/** What a callback's `AbortSignal` is aborted with when its time is up. */
export class CallbackTimeoutError extends Error {
  override readonly name = 'CallbackTimeoutError';
}

/**
 * The running callbacks, with their controller (only those that declared a `signal` parameter have
 * one), in the order they started — which, with one `timeoutMs` for all, is the order of their
 * deadlines — and one timer for all of them, armed for the oldest one's deadline. A list linked
 * through the tasks themselves: adding and removing one allocates nothing (a `Map` keyed by task
 * cost a hash entry per callback and its rehashing).
 */
export class RunningCallbacks {
  private head: CallbackTask | undefined;
  private tail: CallbackTask | undefined;
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
    task.controller = controller;
    task.running = true;
    task.prev = this.tail;
    task.next = undefined;
    if (this.tail) this.tail.next = task;
    else this.head = task;
    this.tail = task;
    // One timer serves every running callback (a timer each cost an allocation and two list updates per callback).
    if (this.timeoutTimer === undefined) this.arm(this.timeoutMs);
  }

  /** Stops watching `task`; `false` when it was not running (timed out or cut by shutdown before). */
  delete(task: CallbackTask): boolean {
    if (!task.running) return false;
    task.running = false;
    const { prev, next } = task;
    if (prev) prev.next = next;
    else this.head = next;
    if (next) next.prev = prev;
    else this.tail = prev;
    task.prev = task.next = task.controller = undefined;
    return true;
  }

  /** The running callbacks and their controllers, oldest first (a copy). */
  entries(): Array<[CallbackTask, AbortController | undefined]> {
    const out: Array<[CallbackTask, AbortController | undefined]> = [];
    for (let task = this.head; task; task = task.next) out.push([task, task.controller]);
    return out;
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
      // `onTimeout` removes the task (it never throws; it may start others, at the tail): take the head each time.
      for (let task = this.head; task && task.started + this.timeoutMs <= now; task = this.head) {
        this.onTimeout(task, task.controller);
        if (this.head === task) break; // not removed after all: never spin on it (the timer comes back to it)
      }
    } catch (error) {
      this.onError(error);
    }
    this.timeoutTimer = undefined;
    const oldest = this.head;
    if (oldest) this.arm(Math.max(1, Math.ceil(oldest.started + this.timeoutMs - performance.now())));
  }
}
