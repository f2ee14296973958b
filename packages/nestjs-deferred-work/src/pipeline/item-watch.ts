import type { ItemOutcome } from '../core/intake.interface';
import type { DeferredItem } from '../core/items/deferred-item.interface';


/**
 * @internal
 * Tells whoever watches an item what became of it, once per sink it went to. For the relays that
 * delete their own record of an item only once it is settled (the SQL outbox). Costs nothing while
 * nothing is watched: every call site checks `watching` first.
 */
class ItemWatch {
  private readonly watchers = new WeakMap<object, (outcome: ItemOutcome) => void>();
  /** Items watched now; call sites skip the lookup while it is 0. */
  watching = 0;

  /** Calls `onOutcome` for each outcome of `item` (one per sink it is routed to) until `unwatch`. */
  watch(item: DeferredItem, onOutcome: (outcome: ItemOutcome) => void): void {
    if (!this.watchers.has(item)) this.watching++;
    this.watchers.set(item, onOutcome);
  }

  unwatch(item: DeferredItem): void {
    if (this.watchers.delete(item)) this.watching--;
  }

  /** Told of every outcome of every item while set (serverless mode's tracking of an invocation's items). */
  private listener: ((item: DeferredItem, outcome: ItemOutcome) => void) | undefined;

  /** Sets the one listener told of every outcome (counted as one watched item while set); returns how to remove it. */
  listen(listener: (item: DeferredItem, outcome: ItemOutcome) => void): () => void {
    if (!this.listener) this.watching++;
    this.listener = listener;
    return () => {
      if (this.listener !== listener) return;
      this.listener = undefined;
      this.watching--;
    };
  }

  settled(item: DeferredItem, outcome: ItemOutcome): void {
    this.watchers.get(item)?.(outcome);
    this.listener?.(item, outcome);
  }
}

/**
 * @internal On `globalThis` under a registered symbol: the ES module and CommonJS builds loaded side
 * by side tell the same watchers.
 */
export const itemWatch: ItemWatch = ((globalThis as Record<symbol, ItemWatch | undefined>)[Symbol.for('nestjs-deferred-work.item-watch')] ??= new ItemWatch());
