import type { DeferredItem } from '../../core/items/deferred-item.interface';
import { earliestDeadline } from '../item-budgets';
import { HardStop } from './hard-stop';

/** Why a write was cut short: the deadline of an item it carried (a serverless invocation's) passed. */
export class ItemDeadlineError extends Error {
  override readonly name = 'ItemDeadlineError';
  constructor() {
    super('cut short at the deadline of its items (the serverless invocation they belong to ends)');
  }
}

/**
 * The stop a write watches: the processor's own hard stop (shutdown's deadline) when none of its
 * items has a deadline; else one that also comes at the earliest of their deadlines, so that no write
 * is left in flight when the invocation's environment may be frozen. Either way the write is cut
 * without the grace period a write timeout gets.
 */
export function writeStop(entries: readonly { item: DeferredItem }[], processorStop: HardStop): HardStop {
  const deadline = earliestDeadline(entries);
  return deadline === undefined ? processorStop : new DeadlineStop(processorStop, deadline);
}

class DeadlineStop extends HardStop {
  constructor(
    private readonly parent: HardStop,
    private readonly deadline: number,
  ) {
    super();
    if (parent.signal.aborted) this.abort(parent.signal.reason);
    else if (deadline <= Date.now()) this.abort(new ItemDeadlineError());
  }

  override watch(onStop: (reason: unknown) => void): () => void {
    if (this.signal.aborted) {
      // Already past: the write is cut as soon as it has started.
      queueMicrotask(() => onStop(this.signal.reason));
      return () => undefined;
    }
    const unwatch = super.watch(onStop);
    const unwatchParent = this.parent.watch((reason) => this.abort(reason));
    const timer = setTimeout(() => this.abort(new ItemDeadlineError()), Math.max(0, this.deadline - Date.now()));
    timer.unref();
    return () => {
      clearTimeout(timer);
      unwatchParent();
      unwatch();
    };
  }
}
