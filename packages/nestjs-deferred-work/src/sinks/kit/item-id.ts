import { newItemId } from '../../core/items/item-id';

/**
 * The item's stable id (`item.id`), which the dispatcher gives every item when it accepts it. An item
 * written outside the dispatcher (a sink called directly, in a test) gets one here, on the item
 * itself, so a retry of the same item object still carries the same id.
 */
export function itemId(item: { id?: string }): string {
  return (item.id ??= newItemId());
}
