/**
 * What `flush()` and the drain wait on: woken on the next settled entry, or after a timeout. The timer
 * keeps the process alive (a drain must not let it exit).
 */
export class ProgressWaiters {
  private waiters: Array<() => void> = [];

  /** Resolves on the next `notify()` or after `ms`. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  /** Wakes every waiter. */
  notify(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
