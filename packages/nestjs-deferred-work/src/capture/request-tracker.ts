import type { RouteTimingStats } from '../core/stats.interface';
import { MAX_TIMER_MS } from '../core/timers';
import { RouteTimings } from './route-timing';

/**
 * @internal
 * Counts decorated requests (finished, aborted, still open) and sums their timings per route
 * (`timing` option): what the capture layer knows and the pipeline does not.
 */
export class RequestTracker {
  private finished = 0;
  private aborted = 0;
  private open = 0;
  private readonly timings = new RouteTimings();
  private openWaiters: Array<() => void> = [];
  /** Told of each measured request (the library's own metrics, opt-in); none by default. */
  private timingObservers: Array<(route: string, handlerMs: number, sendMs: number) => void> = [];

  /** A decorated request whose response has not ended yet. */
  opened(): void {
    this.open++;
  }

  /** A decorated request's outcome. */
  ended(outcome: 'finished' | 'aborted'): void {
    if (outcome === 'finished') this.finished++;
    else this.aborted++;
    if (--this.open === 0 && this.openWaiters.length > 0) {
      const waiters = this.openWaiters;
      this.openWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Adds one measured request to its route's sums: its times in ms, and the items it deferred before its response finished. */
  recordTiming(route: string, handlerMs: number, sendMs: number, items = 0): void {
    this.timings.record(route, handlerMs, sendMs, items);
    for (const observer of this.timingObservers) observer(route, handlerMs, sendMs);
  }

  /** Tells `observer` of each measured request from now on (`route` is `"METHOD /template"`); returns how to stop. */
  observeTimings(observer: (route: string, handlerMs: number, sendMs: number) => void): () => void {
    this.timingObservers = [...this.timingObservers, observer];
    return () => {
      this.timingObservers = this.timingObservers.filter((o) => o !== observer);
    };
  }

  /** Resolves `true` once no decorated request is open, `false` after `timeoutMs`. */
  whenNoneOpen(timeoutMs: number): Promise<boolean> {
    if (this.open === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS));
      this.openWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  requests(): { finished: number; aborted: number; open: number } {
    return { finished: this.finished, aborted: this.aborted, open: this.open };
  }

  routes(): Record<string, RouteTimingStats> {
    return this.timings.snapshot();
  }
}
