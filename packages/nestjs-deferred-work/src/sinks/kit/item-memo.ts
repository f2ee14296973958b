/**
 * A value a sink builds once per item — its stream entry, its row, its message — and keeps until the
 * item is written (a retry reuses it), held on the item itself under a symbol of this memo's own (a
 * non-enumerable property: not copied by a spread, not serialised, not compared by `toEqual`).
 *
 * Not a `WeakMap`: a WeakMap's table lives in V8's old generation, and the values of its entries are
 * kept through young-generation collections for as long as their keys have been promoted, so with
 * items waiting out the linger and the write, most entries and everything they hold were promoted and
 * collected only by full collections. Measured on the `redis-stream` benchmark route (Fastify, 2 vCPUs,
 * builds alternating): 63.6 ms of garbage-collection pauses a second with the WeakMap, 23.8 with the
 * property (the event emitter's route: 16.9–24.0), the longest pause 8.0 ms against 5.4.
 *
 * An item that cannot take a property (frozen, sealed) is memoised in a WeakMap instead.
 */
export class ItemMemo<V> {
  private readonly key: symbol;
  private fallback: WeakMap<object, V> | undefined;

  /** @param description names the symbol (seen in a debugger), e.g. `'RedisStreamSink entry'`. */
  constructor(description: string) {
    this.key = Symbol(description);
  }

  /** The value kept for `item`, or `undefined`. */
  get(item: object): V | undefined {
    // the map first when there is one: it holds what was set once the item could no longer take it
    const kept = this.fallback?.get(item);
    return kept !== undefined ? kept : (item as Record<symbol, V | undefined>)[this.key];
  }

  /** Keeps `value` for `item` (replacing one kept before). */
  set(item: object, value: V): void {
    if (Object.isExtensible(item) || Object.prototype.hasOwnProperty.call(item, this.key)) {
      try {
        Object.defineProperty(item, this.key, { value, writable: true, configurable: true, enumerable: false });
        return;
      } catch {
        // a property that cannot be defined after all (a proxy that refuses it): the map below
      }
    }
    (this.fallback ??= new WeakMap()).set(item, value);
  }
}
