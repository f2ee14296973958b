import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkItemFailure, SinkWriteResult } from '../../core/sink.interface';

/**
 * A write done item by item in-process (a logger, a metrics registry): `apply` runs for each item of
 * `kind`; an item of another kind, or one `apply` throws for, fails alone and is not retried (the
 * same item would fail the same way). Resolves like a sink's `write`.
 */
export function eachItem<K extends SinkKind>(
  batch: readonly SinkItem[],
  kind: K,
  sink: string,
  apply: (item: Extract<SinkItem, { kind: K }>) => void,
): SinkWriteResult | undefined {
  let failed: SinkItemFailure[] | undefined;
  for (let index = 0; index < batch.length; index++) {
    const item = batch[index];
    try {
      if (item.kind !== kind) throw new Error(`${sink} takes ${kind} items only, got a ${String(item.kind)}.`);
      apply(item as Extract<SinkItem, { kind: K }>);
    } catch (error) {
      (failed ??= []).push({ index, error, retryable: false });
    }
  }
  return failed ? { failed } : undefined;
}
