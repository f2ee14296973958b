import type { SinkItemFailure, SinkWriteResult } from '../../core/sink.interface';

/** The items of one batch that go to one destination (a URL, a queue), with their indexes in the batch. */
export interface Part<D, V> {
  destination: D;
  indexes: number[];
  values: V[];
}

/**
 * Groups a batch by destination, keeping each item's index, and collects the failures of the
 * batch: what every sink that fans a batch out (one request per URL, one send per queue) does.
 */
export class Partitions<K, D, V> {
  private readonly parts = new Map<K, Part<D, V>>();
  /** Failures of the batch: items refused before sending, and those the sink adds after sending. */
  readonly failed: SinkItemFailure[] = [];

  /** Puts the item at `index` into the part for `key`, creating it with `destination()` on first use. */
  add(key: K, index: number, value: V, destination: () => D): void {
    let part = this.parts.get(key);
    if (!part) this.parts.set(key, (part = { destination: destination(), indexes: [], values: [] }));
    part.indexes.push(index);
    part.values.push(value);
  }

  /** Refuses the item at `index` before sending. */
  refuse(index: number, error: unknown, retryable = false): void {
    this.failed.push({ index, error, retryable });
  }

  /** The parts, in the order their first item came. */
  list(): Part<D, V>[] {
    return [...this.parts.values()];
  }

  /** The batch's result: nothing when no item failed, else the failures by index. */
  result(): SinkWriteResult | undefined {
    if (this.failed.length === 0) return undefined;
    this.failed.sort((a, b) => a.index - b.index);
    return { failed: this.failed };
  }
}
