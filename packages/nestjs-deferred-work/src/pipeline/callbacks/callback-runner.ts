import { AsyncResource } from 'node:async_hooks';
import type { CallbackItem } from '../../core/items/deferred-item.interface';
import type { CallbackRunnerOptions } from './callback-runner.options';
import { CallbackRetries } from './callback-retries';
import { invokeCallback } from './invoke-callback';
import type { DeadLetter, DeadLetterReason } from '../../core/dead-letter.interface';
import { errorMessage } from '../../core/error-message';
import type { ProcessorHooks } from '../processor/processor-base';
import { type KindCounts, kindCountsOf, SinkCounters } from '../processor/sink-counters';
import type { CallbackRunnerStats, SinkStats } from '../../core/stats.interface';
import { SettleWaiters } from './settle-waiters';
import { SlowestRuns } from './slowest-runs';
import { TaskQueue } from './task-queue';
import { CallbackTimeoutError, type CallbackTask, RunningCallbacks } from './running-callbacks';

/** Name under which the runner appears in `stats().sinks` and dead letters. */
export const CALLBACK_RUNNER_NAME = 'callbacks';

/**
 * Runs `run(fn)` callbacks in-process as independent tasks: at most `concurrency` at once, each
 * with its own timeout and `AbortSignal`, the rest waiting in a bounded queue. A slow callback holds
 * only its own slot. Accounting as for sinks: `accepted = delivered + pending + dropped + deadLettered`
 * at every moment, where pending = queued + running + waiting for a retry.
 */
export class CallbackRunner {
  readonly name = CALLBACK_RUNNER_NAME;
  private readonly queue = new TaskQueue<CallbackTask>();
  private running = 0;
  private scheduled = false;
  private stopped = false;
  /** Shutdown finished: new callbacks are dead-lettered (`closed`) at once. */
  private closedForGood = false;
  /** Aborted when shutdown's deadline passes: aborts running callbacks and cuts retry waits. */
  private readonly hardStop = new AbortController();
  /** Running callbacks, oldest first, timed out by one timer. */
  private readonly live: RunningCallbacks;
  /** Failed callbacks waiting to run again. */
  private readonly retries: CallbackRetries;
  private readonly waiters = new SettleWaiters();
  private seq = 0;
  /** Inside `startWhatFits`: a callback that settles synchronously leaves starting the next to that loop. */
  private starting = false;
  /** Starts what fits, always in the async context the runner was created in, never in a request's. */
  private readonly pump: () => void;
  private readonly startQueued: () => void;
  /** `onSettled`, bound once (a callback's outcome). */
  private readonly settled = (task: CallbackTask, error: unknown): void => this.onSettled(task, error);

  /** Here a "write" is one run of one callback. */
  private readonly counters = new SinkCounters();
  /** `counters.kind('callback')`, kept once the first callback is accepted (read twice per callback). */
  private callbackCounts: KindCounts | undefined;
  private timedOut = 0;
  private overdue = 0;
  private finishedLate = 0;
  private readonly slowest = new SlowestRuns();

  constructor(
    readonly options: CallbackRunnerOptions,
    private readonly hooks: ProcessorHooks,
  ) {
    this.live = new RunningCallbacks(
      options.timeoutMs,
      (task, controller) => this.onTimeout(task, controller),
      (error) => this.internalError(error),
    );
    this.retries = new CallbackRetries(options, this.hardStop.signal, {
      due: (task) => {
        this.queue.unshift(task);
        this.pump();
      },
      givenUp: (task) => this.bury(task, 'shutdown', 'shutdown deadline reached before its retry'),
      error: (error) => this.internalError(error),
    });
    this.pump = AsyncResource.bind(() => this.startWhatFits());
    this.startQueued = () => {
      this.scheduled = false;
      this.pump();
    };
  }

  /** Callbacks queued, running or waiting for a retry. */
  get pending(): number {
    return this.queue.length + this.running + this.retries.waiting;
  }

  /** Whether shutdown has finished (new callbacks are refused). */
  get closed(): boolean {
    return this.closedForGood;
  }

  /**
   * Accept a callback; returns whether it was queued (when not, it was dropped or, after shutdown,
   * dead-lettered — and counted either way). With `inline` (testing) it starts at once, in the
   * caller's turn, whatever the concurrency.
   */
  enqueue(item: CallbackItem, inline = false): boolean {
    this.counters.accepted++;
    (this.callbackCounts ??= this.counters.kind('callback')).accepted++;
    const task: CallbackTask = { item, attempts: 0, seq: ++this.seq, started: 0, controller: undefined, prev: undefined, next: undefined, running: false };
    if (this.closedForGood) {
      this.bury(task, 'closed', 'deferred after the application shut down');
      return false;
    }
    if (inline) {
      this.start(task);
      return true;
    }
    // Room for `maxQueueSize` waiting callbacks beyond the free slots (the queue also holds callbacks
    // accepted in this turn, which start on the next).
    if (this.queue.length + this.retries.waiting + this.busySlots >= this.options.maxQueueSize + this.options.concurrency) {
      this.counters.drop('callback', 'queue-full');
      return false;
    }
    this.queue.push(task);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.startQueued);
    }
    return true;
  }

  /** Its counts by kind: all `callback`. */
  kindCounts(): Record<string, KindCounts> {
    return kindCountsOf(this.counters);
  }

  stats(): SinkStats {
    return this.counters.snapshot(this.pending, this.queue.length + this.retries.waiting, this.running);
  }

  runnerStats(): CallbackRunnerStats {
    return {
      running: this.running,
      queued: this.queue.length,
      retrying: this.retries.waiting,
      concurrency: this.options.concurrency,
      timedOut: this.timedOut,
      overdue: this.overdue,
      finishedLate: this.finishedLate,
      slowest: this.slowest.snapshot(),
    };
  }

  /** Resolves `true` once every callback accepted before the call has settled, `false` at `deadline` (epoch ms). */
  flush(deadline: number): Promise<boolean> {
    this.pump();
    return this.waiters.wait(this.seq, this.pending, deadline - Date.now());
  }

  /**
   * Runs what is queued until nothing is pending or `deadline` passes — callbacks deferred meanwhile
   * included — then aborts the running ones and dead-letters everything left (`shutdown`). From then
   * on new callbacks are dead-lettered (`closed`). Idempotent. Resolves with the number given up on.
   */
  async shutdown(deadline: number): Promise<number> {
    if (this.stopped) return 0;
    this.stopped = true;
    while (this.pending > 0 && Date.now() < deadline) await this.flush(deadline);
    const before = this.counters.deadLettered;
    this.closedForGood = true;
    if (this.pending > 0) {
      this.hardStop.abort(new Error('shutdown deadline reached'));
      for (const [task, controller] of this.live.entries()) {
        controller?.abort(this.hardStop.signal.reason);
        this.settleRunning(task, 'shutdown', 'shutdown deadline reached while it was running');
      }
      for (let task = this.queue.shift(); task; task = this.queue.shift()) this.bury(task, 'shutdown', 'shutdown deadline reached');
      // Retry waits end at once (hardStop) and bury their task a few microtasks later.
      while (this.retries.waiting > 0) await new Promise((resolve) => setImmediate(resolve));
    }
    return this.counters.deadLettered - before;
  }

  /** Slots taken: running callbacks, and timed-out ones that ignore their signal and run on. */
  private get busySlots(): number {
    return this.running + this.overdue;
  }

  /** Starts queued callbacks while slots are free (call it through `pump`, for the async context). */
  private startWhatFits(): void {
    if (this.hardStop.signal.aborted || this.starting) return;
    this.starting = true;
    try {
      while (this.busySlots < this.options.concurrency && this.queue.length > 0) this.start(this.queue.shift()!);
    } finally {
      this.starting = false;
    }
  }

  /** Starts queued callbacks if a slot may have freed and there are any (no async-scope switch when there are none). */
  private startNext(): void {
    if (this.queue.length > 0 && !this.starting) this.pump();
  }

  private start(task: CallbackTask): void {
    task.attempts++;
    this.running++;
    this.counters.writes++;
    this.counters.lastProgressAt = Date.now();
    // An AbortController costs ~5 µs per callback (most of the runner's cost): only a callback that
    // declares a parameter (`run((signal) => …)`) gets one. Timeouts and shutdown apply either way.
    const controller = task.item.fn.length > 0 ? new AbortController() : undefined;
    task.started = performance.now();
    this.live.add(task, controller);
    invokeCallback(task, controller, this.settled);
  }

  private onTimeout(task: CallbackTask, controller: AbortController | undefined): void {
    try {
      this.timedOut++;
      this.overdue++;
      const message = `callback timed out after ${this.options.timeoutMs} ms${controller ? '; its signal was aborted' : ''}`;
      controller?.abort(new CallbackTimeoutError(message));
      this.settleRunning(task, 'timeout', message);
      this.hooks.writeFailed(this.name, `${message} (it may still be running; see stats().callbacks.overdue)`);
    } catch (error) {
      this.internalError(error);
    }
  }

  /** Last line of defence: a throwing hook (a logger, say) must not become an unhandled rejection or an uncaught exception. */
  private internalError(error: unknown): void {
    try {
      this.hooks.writeFailed(this.name, `internal error: ${errorMessage(error)}`);
    } catch {
      // nothing left to tell
    }
  }

  /** A callback's promise settled (`error` undefined: fulfilled). Never throws. */
  private onSettled(task: CallbackTask, error: unknown): void {
    try {
      const ms = performance.now() - task.started;
      this.counters.lastProgressAt = Date.now();
      this.counters.lastWriteMs = ms;
      this.slowest.record(ms);
      if (!this.live.delete(task)) {
        // Timed out or cut by shutdown before: already dead-lettered; it ended after all, freeing its slot.
        this.overdue--;
        this.finishedLate++;
        return; // the slot it held starts what waits (finally)
      }
      this.running--;
      if (error === undefined) {
        this.counters.delivered++;
        this.callbackCounts!.delivered++;
        this.waiters.settled(task.seq);
      } else {
        this.fail(task, error);
      }
    } catch (e) {
      this.internalError(e);
    } finally {
      // Also when a hook threw: the freed slot must still start what waits.
      this.startNext();
    }
  }

  private fail(task: CallbackTask, error: unknown): void {
    const message = errorMessage(error);
    this.counters.failedWrite(message);
    const buried = this.retries.verdict(task, error);
    if (buried) this.bury(task, buried, message);
    else {
      this.counters.retried++;
      this.callbackCounts!.retried++;
      this.retries.retry(task);
    }
    this.hooks.writeFailed(this.name, `callback failed: ${message}`);
  }

  /** A running task given up on (timeout, shutdown): dead-lettered now; it keeps its slot (as overdue) until it ends. */
  private settleRunning(task: CallbackTask, reason: DeadLetterReason, message: string): void {
    this.live.delete(task);
    this.running--;
    if (reason === 'shutdown') this.overdue++;
    this.bury(task, reason, message);
    this.pump();
  }

  private bury(task: CallbackTask, reason: DeadLetterReason, message: string): void {
    const at = this.counters.buried(1, reason);
    this.callbackCounts!.deadLettered++;
    const letter: DeadLetter = { item: task.item, sink: this.name, reason, error: message, attempts: task.attempts, at };
    this.waiters.settled(task.seq);
    this.hooks.deadLetter([letter]);
  }
}
