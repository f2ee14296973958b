/** What a queue may carry that the holder uses: the shutdown hook a Nest integration (`@nestjs/bull`, `@nestjs/bullmq`) puts on it. */
interface ClosableByNest {
  onApplicationShutdown?: (signal?: string) => unknown;
}

/**
 * Keeps queues open until the deferred work has drained. `@nestjs/bull` and `@nestjs/bullmq` close
 * each queue in its own `onApplicationShutdown` hook, and Nest runs the hooks of the modules that
 * register queues *before* those of a global module such as `DeferredWorkModule`: without this, the
 * drain would meet closed queues. Each held queue's hook is wrapped to await the drain (idempotent,
 * bounded by `shutdownTimeoutMs`) first, then close as before.
 *
 * Queue sinks hold every queue they may write to when the dispatcher attaches them at bootstrap, and
 * any queue they first meet later (even during shutdown: the wrapped hook then joins the drain under way).
 */
export class QueueHolder {
  private drain: (() => Promise<unknown>) | undefined;
  private readonly held = new WeakSet<object>();

  /** The drain to wait for (the dispatcher's shutdown). */
  attach(drain: () => Promise<unknown>): void {
    this.drain = drain;
  }

  /** Wraps the queue's Nest shutdown hook, once; queues without one (created by the app itself) are left alone. */
  hold(queue: object): void {
    const target = queue as ClosableByNest;
    const close = target.onApplicationShutdown;
    if (typeof close !== 'function' || this.held.has(target)) return;
    this.held.add(target);
    const holder = this;
    target.onApplicationShutdown = async function drainThenClose(this: unknown, signal?: string) {
      try {
        await holder.drain?.();
      } catch {
        // The drain logs its own failures; the queue closes regardless.
      }
      return close.call(this, signal);
    };
  }
}
