import { SinkConfigError } from '../kit/sink-config.error';
import type { DeferredItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext } from '../../core/sink.interface';

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
  /** Items delivered, oldest first; trimmed back to `capacity` once it holds twice that (amortised). */
  private kept: SinkItem[] = [];
  private sizes: number[] = [];
  /** Items delivered since creation (or the last `clear()`), not capped by `capacity`. */
  delivered = 0;
  private readonly capacity: number;
  private waiters: Waiter[] = [];

  constructor(options: MemorySinkOptions = {}) {
    this.name = options.name ?? 'memory';
    this.capacity = options.capacity ?? 10_000;
    if (!Number.isInteger(this.capacity) || this.capacity < 0) {
      throw new SinkConfigError(`MemorySink: capacity must be a whole number >= 0, got ${String(options.capacity)}.`, 'capacity');
    }
  }

  /** Delivered items, oldest first: the last `capacity` of them. */
  get items(): SinkItem[] {
    if (this.kept.length > this.capacity) this.kept = this.kept.slice(this.kept.length - this.capacity);
    return this.kept;
  }

  /** Sizes of the batches written, in order (the last 1000). */
  get batchSizes(): number[] {
    if (this.sizes.length > 1000) this.sizes = this.sizes.slice(-1000);
    return this.sizes;
  }

  async write(batch: readonly SinkItem[], _context?: SinkWriteContext): Promise<void> {
    this.sizes.push(batch.length);
    if (this.sizes.length > 2000) this.sizes = this.sizes.slice(-1000);
    for (let i = 0; i < batch.length; i++) this.kept.push(batch[i]);
    // Trim only once twice the capacity is held: a copy every `capacity` items, not a shift per write.
    if (this.kept.length > 2 * this.capacity) this.kept = this.kept.slice(this.kept.length - this.capacity);
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
    this.kept = [];
    this.sizes = [];
    this.delivered = 0;
  }

  private release(): void {
    const ready = this.waiters.filter((w) => this.delivered >= w.count);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => this.delivered < w.count);
    for (const w of ready) w.resolve();
  }
}
