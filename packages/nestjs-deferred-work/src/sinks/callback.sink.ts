import { setMaxListeners } from 'node:events';
import type { CallbackItem } from '../items/deferred-item.interface';
import type { DeferredSink, SinkItemFailure, SinkWriteContext, SinkWriteResult } from './deferred-sink.interface';

/** Reserved name of the built-in runner of `run(fn)` callbacks. */
export const CALLBACK_SINK_NAME = 'callbacks';

/**
 * Runs deferred callbacks in-process, concurrently within a batch. A callback that throws is
 * reported as a failed item; callbacks are not retried unless `sinkOptions.callbacks.maxAttempts`
 * says so, since they are arbitrary code that may not be safe to run twice.
 */
export class CallbackSink implements DeferredSink<CallbackItem> {
  readonly name = CALLBACK_SINK_NAME;
  readonly defaults = { maxAttempts: 1 };

  async write(batch: readonly CallbackItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    // One abort listener for the whole batch (one per callback tripped Node's MaxListenersExceededWarning
    // past 10 callbacks), and room for the callbacks' own listeners on this per-write signal.
    setMaxListeners(batch.length + 10, signal);
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('callback aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    let outcomes: PromiseSettledResult<void>[];
    try {
      outcomes = await Promise.allSettled(batch.map((item) => runOne(item, signal, aborted)));
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
    let failed: SinkItemFailure[] | undefined;
    for (let index = 0; index < outcomes.length; index++) {
      const outcome = outcomes[index];
      if (outcome.status === 'rejected') (failed ??= []).push({ index, error: outcome.reason });
    }
    return failed ? { failed } : undefined;
  }
}

async function runOne(item: CallbackItem, signal: AbortSignal, aborted: Promise<never>): Promise<void> {
  if (signal.aborted) throw signal.reason;
  // Called synchronously: in inline mode (testing) a callback's synchronous part runs at once.
  await Promise.race([Promise.resolve(item.fn(signal)), aborted]);
}
