import type { DeferredItem } from '../core/items/deferred-item.interface';

/**
 * @internal
 * Items whose time budget ends before the module's retry budget (`maxRetryDurationMs`): a serverless
 * invocation's deadline, after which the environment may be frozen. An item with a deadline is not
 * written, nor retried, nor left in flight past it: the processor expires it then (to the back of
 * its sink's spool when the spool takes such entries, else dead-lettered `expired`). Items without one
 * — every item outside serverless mode — are untouched, and the lookups are skipped while `active` is 0.
 *
 * Also the one place the serverless mode learns of accepted items (`observe`, called by the
 * dispatcher with each item it accepts). Process-wide and on `globalThis` under a registered symbol,
 * so that the ES module and CommonJS builds loaded side by side share it.
 */
export interface ItemBudgets {
  /** Called by `Dispatcher#dispatch` with each item it accepts, before routing it (`source` is the dispatcher). */
  observe: ((item: DeferredItem, source: object) => void) | undefined;
  /** Items that have a deadline now (a count: lookups are skipped while it is 0). */
  active: number;
  /** Each item's deadline, epoch ms. */
  readonly deadlines: WeakMap<object, number>;
}

export const itemBudgets: ItemBudgets = ((globalThis as Record<symbol, ItemBudgets | undefined>)[Symbol.for('nestjs-deferred-work.item-budgets')] ??= {
  observe: undefined,
  active: 0,
  deadlines: new WeakMap(),
});

/** Gives `item` a deadline (epoch ms); an earlier deadline it has already stays. */
export function setItemDeadline(item: DeferredItem, deadline: number): void {
  const had = itemBudgets.deadlines.get(item);
  if (had === undefined) itemBudgets.active++;
  if (had === undefined || deadline < had) itemBudgets.deadlines.set(item, deadline);
}

/** Forgets `item`'s deadline (its invocation has been released). */
export function clearItemDeadline(item: DeferredItem): void {
  if (itemBudgets.deadlines.delete(item)) itemBudgets.active--;
}

/** The earliest deadline among `entries`' items, or `undefined` when none has one. */
export function earliestDeadline(entries: readonly { item: DeferredItem }[]): number | undefined {
  if (itemBudgets.active === 0) return undefined;
  let earliest: number | undefined;
  for (const entry of entries) {
    const at = itemBudgets.deadlines.get(entry.item);
    if (at !== undefined && (earliest === undefined || at < earliest)) earliest = at;
  }
  return earliest;
}

/** Takes out of `entries` (in place) those whose deadline has passed at `now`, and returns them. */
export function takeExpired<T extends { item: DeferredItem }>(entries: T[], now: number): T[] {
  if (itemBudgets.active === 0) return [];
  const expired: T[] = [];
  let kept = 0;
  for (const entry of entries) {
    const at = itemBudgets.deadlines.get(entry.item);
    if (at !== undefined && at <= now) expired.push(entry);
    else entries[kept++] = entry;
  }
  entries.length = kept;
  return expired;
}

/** `ms`, or less: no longer than until the earliest deadline among `entries` (never below 0). */
export function withinDeadline(ms: number, entries: readonly { item: DeferredItem }[]): number {
  const earliest = earliestDeadline(entries);
  return earliest === undefined ? ms : Math.max(0, Math.min(ms, earliest - Date.now()));
}
