import type { CallbackTask } from './running-callbacks';

/**
 * One run of a callback: calls it now, in the caller's turn (with `controller`'s signal when it has
 * one), and reports how it ended to `settled` (`error` undefined: it returned, or its promise was
 * fulfilled), once — unless it threw after it had already settled.
 */
export function invokeCallback(task: CallbackTask, controller: AbortController | undefined, settled: (task: CallbackTask, error: unknown) => void): void {
  try {
    // Called synchronously: in inline mode (testing) the callback's synchronous part runs at once.
    const result: unknown = controller ? task.item.fn(controller.signal) : (task.item.fn as () => unknown)();
    // A callback that returned no promise (nor other thenable) has ended: settled now, without a promise.
    if (!isThenable(result)) return settled(task, undefined);
    // `settled` never throws (it catches its own errors): no `.catch()` link, one promise less per callback.
    // Promise.resolve adopts a foreign thenable (and returns a native promise as it is).
    Promise.resolve(result).then(
      () => settled(task, undefined),
      (error: unknown) => settled(task, error ?? new Error('callback rejected')),
    );
  } catch (error) {
    // The callback threw, or returned a promise whose `then` or `constructor` throws when read: a
    // failure of the callback, not of the runner (unless it already settled).
    if (task.running) settled(task, error ?? new Error('callback rejected'));
  }
}

/** Whether `value` can be awaited for a later outcome (a promise, or any object or function with a `then` method). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}
