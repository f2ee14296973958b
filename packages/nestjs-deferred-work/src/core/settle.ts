import { MAX_TIMER_MS } from './timers';

/** How a promise settled, or `pending` when it had not by a deadline. */
export type Settled<T> = PromiseSettledResult<T> | { status: 'pending' };

/** How `promise` settled before `arm`'s deadline fired (`arm` schedules it and returns how to cancel it), or `pending`. */
function settleBefore<T>(promise: Promise<T>, arm: (expire: () => void) => () => void): Promise<Settled<T>> {
  return new Promise((resolve) => {
    const cancel = arm(() => resolve({ status: 'pending' }));
    promise.then(
      (value) => {
        cancel();
        resolve({ status: 'fulfilled', value });
      },
      (reason: unknown) => {
        cancel();
        resolve({ status: 'rejected', reason });
      },
    );
  });
}

/** How `promise` settled by the end of this turn of the event loop (its microtasks and ticks), or `pending`. */
export function settleThisTurn<T>(promise: Promise<T>): Promise<Settled<T>> {
  return settleBefore(promise, (expire) => {
    const immediate = setImmediate(expire);
    return () => clearImmediate(immediate);
  });
}

/**
 * How `promise` settled within `ms`, or `pending`. The timer does not keep the process alive unless
 * `keepAlive` (shutdown waits on it).
 */
export function settleWithin<T>(promise: Promise<T>, ms: number, keepAlive = false): Promise<Settled<T>> {
  if (ms <= 0) return Promise.resolve({ status: 'pending' });
  return settleBefore(promise, (expire) => {
    const timer = setTimeout(expire, Math.min(ms, MAX_TIMER_MS));
    if (!keepAlive) timer.unref();
    return () => clearTimeout(timer);
  });
}

/**
 * Whether `promise` settles (either way) before `deadline` (`Date.now()` ms); a deadline already passed
 * still lets it settle within this turn of the event loop. It is not cancelled when it does not; its
 * late rejection is handled. The timer keeps the process alive: for a shutdown step that must not
 * outlast its deadline when a server stops answering.
 */
export async function settlesBy(promise: Promise<unknown> | undefined, deadline: number): Promise<boolean> {
  if (!promise) return true;
  const ms = deadline - Date.now();
  const settled = ms > 0 ? await settleWithin(promise, ms, true) : await settleThisTurn(promise);
  return settled.status !== 'pending';
}
