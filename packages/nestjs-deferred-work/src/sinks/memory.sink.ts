import type { DeferredItem, SinkItem } from '../items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext } from './deferred-sink.interface';

/** Options of {@link MemorySink}. */
export interface MemorySinkOptions {
  /** Sink name used by routing. Default `'memory'`. */
  name?: string;
  /** Most items kept in `items` (the oldest are let go first; `delivered` keeps counting). Default `10000`. */
  capacity?: number;
}

interface Waiter {
  count: number;
  resolve: () => void;
}

/**
 * Keeps delivered items in memory. The default sink when none is configured, and what tests use:
 * `items` holds what was delivered, `waitFor(n)` resolves once `n` items have been delivered.
 */
export class MemorySink implements DeferredSink<SinkItem> {
  readonly name: string;
  /** Delivered items, oldest first, at most `capacity` of them. */
  readonly items: SinkItem[] = [];
  /** Sizes of the batches written, in order. */
  readonly batchSizes: number[] = [];
  /** Items delivered since creation (or the last `clear()`), not capped by `capacity`. */
  delivered = 0;
  private readonly capacity: number;
  private waiters: Waiter[] = [];

  constructor(options: MemorySinkOptions = {}) {
    this.name = options.name ?? 'memory';
    this.capacity = options.capacity ?? 10_000;
    if (!Number.isInteger(this.capacity) || this.capacity < 0) {
      throw new TypeError(`MemorySink: capacity must be a whole number >= 0, got ${String(options.capacity)}.`);
    }
  }

  async write(batch: readonly SinkItem[], _context?: SinkWriteContext): Promise<void> {
    this.batchSizes.push(batch.length);
    for (const item of batch) this.items.push(item);
    const excess = this.items.length - this.capacity;
    if (excess > 0) this.items.splice(0, excess);
    this.delivered += batch.length;
    // Released on the next turn, once the dispatcher has counted this write as delivered.
    if (this.waiters.length > 0) setImmediate(() => this.release());
  }

  /** Delivered items of one kind. */
  ofKind<K extends SinkItem['kind']>(kind: K): Extract<DeferredItem, { kind: K }>[] {
    return this.items.filter((item): item is Extract<SinkItem, { kind: K }> => item.kind === kind) as never;
  }

  /**
   * Resolves once `count` items in all have been delivered to this sink (counting from creation or
   * the last `clear()`); rejects after `timeoutMs` (default `5000`) with what was delivered so far.
   */
  waitFor(count: number, timeoutMs = 5000): Promise<void> {
    if (this.delivered >= count) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`MemorySink "${this.name}": ${this.delivered} of ${count} items delivered after ${timeoutMs} ms.`));
      }, timeoutMs);
      const waiter: Waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Forget what was delivered (pending `waitFor` calls keep waiting). */
  clear(): void {
    this.items.length = 0;
    this.batchSizes.length = 0;
    this.delivered = 0;
  }

  private release(): void {
    const ready = this.waiters.filter((w) => this.delivered >= w.count);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => this.delivered < w.count);
    for (const w of ready) w.resolve();
  }
}
