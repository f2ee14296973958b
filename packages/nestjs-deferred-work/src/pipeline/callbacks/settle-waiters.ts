/** A wait for the tasks accepted up to `target` to settle. */
interface Waiter {
  target: number;
  remaining: number;
  wake(): void;
}

/**
 * Lets `flush()` wait for the tasks accepted before it, when tasks settle in any order: each wait
 * counts down the tasks it waits for (those pending when it began, all with `seq <= target`).
 */
export class SettleWaiters {
  private waiters: Waiter[] = [];

  /** Resolves `true` once `remaining` tasks with `seq <= target` settled, `false` after `timeoutMs`. */
  wait(target: number, remaining: number, timeoutMs: number): Promise<boolean> {
    if (remaining === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = { target, remaining, wake: () => finish(true) };
      const timer = setTimeout(() => finish(false), Math.max(0, timeoutMs));
      const finish = (done: boolean) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(done);
      };
      this.waiters.push(waiter);
    });
  }

  /** A task settled (delivered or dead-lettered; a retry is not settling). */
  settled(seq: number): void {
    if (this.waiters.length === 0) return;
    for (const waiter of this.waiters) {
      if (seq <= waiter.target && --waiter.remaining === 0) waiter.wake();
    }
  }
}
