import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { settleThisTurn, settleWithin } from '../../core/settle';
import type { HardStop } from './hard-stop';

/** After a write's timeout, how long to let it settle before the next write may start. */
const ABORT_GRACE_MS = 1000;

const noop = () => undefined;

class WriteTimeoutError extends Error {
  override readonly name = 'WriteTimeoutError';
  /** Its code in dead letters and `lastErrorCode`, whichever sink timed out. */
  readonly code = 'ETIMEDOUT';
}

/**
 * Calls `sink.write` with a timeout. On timeout (or when `hardStop` aborts) the write's signal is
 * aborted and the write gets a short grace period to settle — if it still succeeds, it counts — so
 * that writes on one sink do not overlap unless a sink ignores its signal. Never leaves a rejection
 * unhandled, even one that comes after the timeout.
 */
export async function guardedWrite(
  sink: DeferredSink,
  items: DeferredItem[],
  attempt: number,
  timeoutMs: number,
  hardStop: HardStop,
  abandoned?: (settled: Promise<unknown>) => void,
): Promise<void | SinkWriteResult> {
  // The write's signal is made only when the sink reads it: an `AbortController` (an `EventTarget`) costs
  // more than the rest of a write of an in-process sink (memory, logger, metrics), which never reads it.
  let controller: AbortController | undefined;
  /** Set once the write is aborted: the reason its signal carries (or will, when the sink reads it after). */
  let abortedWith: { reason: unknown } | undefined;
  const context: SinkWriteContext = {
    attempt,
    get signal(): AbortSignal {
      if (!controller) {
        controller = new AbortController();
        if (abortedWith) controller.abort(abortedWith.reason);
      }
      return controller.signal;
    },
  };
  // The write's outcome or its abort, whichever comes first — without an 'abort' listener per write:
  // the timeout and the hard stop call `abort` directly.
  let settle!: { resolve: (value: void | SinkWriteResult) => void; reject: (reason: unknown) => void };
  const raced = new Promise<void | SinkWriteResult>((resolve, reject) => (settle = { resolve, reject }));
  const abort = (reason: unknown) => {
    if (abortedWith) return;
    const why = reason ?? new DOMException('This operation was aborted', 'AbortError');
    abortedWith = { reason: why };
    controller?.abort(why);
    // One microtask later: a write that its own 'abort' listener settled (resolved with what it did, or
    // rejected with its own error) wins, as it would in a race against the signal.
    queueMicrotask(() => settle.reject(why));
  };
  const timeout = setTimeout(() => abort(new WriteTimeoutError(`write timed out after ${timeoutMs} ms`)), timeoutMs);
  timeout.unref();
  const stopWatching = hardStop.watch(abort);
  let write: Promise<void | SinkWriteResult>;
  try {
    // Called synchronously, so an inline-mode write does its synchronous part right away.
    write = Promise.resolve(sink.write(items as never, context));
  } catch (error) {
    write = Promise.reject(error);
  }
  // Also keeps a write that settles after its timeout from becoming an unhandled rejection.
  write.then(settle.resolve, settle.reject);
  try {
    return await raced;
  } catch (error) {
    if (!abortedWith || error !== abortedWith.reason) throw error;
    // At the shutdown deadline there is no grace, but a write its own 'abort' listener settles with what
    // it had confirmed (a partial result) still gets this turn of the event loop to do so.
    const late = hardStop.signal.aborted ? await settleThisTurn(write) : await settleWithin(write, Math.min(ABORT_GRACE_MS, timeoutMs));
    if (late.status === 'fulfilled') return late.value;
    // Still pending after its abort and the grace: the sink ignores its signal. Given up on here; the
    // caller is told until it settles (if ever), for the liveness probe.
    if (late.status === 'pending') abandoned?.(write.then(noop, noop));
    throw late.status === 'rejected' ? late.reason : error;
  } finally {
    clearTimeout(timeout);
    stopWatching();
  }
}
