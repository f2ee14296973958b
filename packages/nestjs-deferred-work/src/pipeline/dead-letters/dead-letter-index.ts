import { matchesDeadLetterFilter as matches } from '../../core/dead-letter-filter';
import type { DeadLetterFilter, DeadLetterPage, DeadLetterQuery, DeadLetterRecord } from '../../core/dead-letter-store.interface';

/** How much a built-in store keeps; the oldest records go first. */
export interface DeadLetterBounds {
  /** Records kept at most. */
  maxCount: number;
  /** Bytes of the records' JSON kept at most. */
  maxBytes: number;
  /** Oldest record kept, in ms since it was dead-lettered. */
  maxAgeMs: number;
}

interface Held {
  record: DeadLetterRecord;
  /** Insertion order, the paging cursor. */
  order: number;
  bytes: number;
  /** What the owner keeps with it (the file store: its spool seq). */
  tag?: number;
}

const PAGE_DEFAULT = 100;
const PAGE_MAX = 1000;

/**
 * @internal
 * The records of a built-in store, in memory, oldest first, with their bounds (count, bytes of their
 * JSON, age). What the memory store is, and what the file store keeps beside its spool.
 */
export class DeadLetterIndex {
  private readonly held = new Map<string, Held>();
  private order = 0;
  private bytes = 0;

  constructor(
    readonly bounds: DeadLetterBounds,
    /** Told of each record that leaves (evicted, replaced, removed), with its tag. */
    private readonly onLeave: (tag: number | undefined) => void = () => {},
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** Keeps a record (replacing one with its id), then evicts the oldest past the bounds. Returns the records evicted. */
  put(record: DeadLetterRecord, bytes: number, tag?: number): number {
    this.delete(record.id);
    this.held.set(record.id, { record, order: ++this.order, bytes, tag });
    this.bytes += bytes;
    return this.evict(Date.now());
  }

  get(id: string): DeadLetterRecord | undefined {
    return this.held.get(id)?.record;
  }

  delete(id: string): boolean {
    const held = this.held.get(id);
    if (!held) return false;
    this.held.delete(id);
    this.bytes -= held.bytes;
    this.onLeave(held.tag);
    return true;
  }

  /** Drops the oldest records while a bound is passed (one is always kept if it alone is too large, until a newer one comes). */
  evict(now: number): number {
    let evicted = 0;
    for (const [id, held] of this.held) {
      const over = this.held.size > this.bounds.maxCount || this.bytes > this.bounds.maxBytes || now - held.record.at > this.bounds.maxAgeMs;
      if (!over) break;
      this.delete(id);
      evicted++;
    }
    return evicted;
  }

  /** Drops the oldest record, if any (the file store, when its spool is full). */
  evictOldest(): boolean {
    const first = this.held.keys().next();
    return first.done ? false : this.delete(first.value);
  }

  list(query: DeadLetterQuery): DeadLetterPage {
    this.evict(Date.now());
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? PAGE_DEFAULT)), PAGE_MAX);
    const after = query.after === undefined ? 0 : Number(query.after);
    const records: DeadLetterRecord[] = [];
    let last = 0;
    for (const held of this.held.values()) {
      if (held.order <= after || !matches(held.record, query)) continue;
      if (records.length === limit) return { records, next: String(last) };
      records.push(held.record);
      last = held.order;
    }
    return { records };
  }

  count(filter: DeadLetterFilter): number {
    this.evict(Date.now());
    let count = 0;
    for (const held of this.held.values()) if (matches(held.record, filter)) count++;
    return count;
  }

  remove(ids: readonly string[]): number {
    let removed = 0;
    for (const id of ids) if (this.delete(id)) removed++;
    return removed;
  }

  purge(filter: DeadLetterFilter): number {
    const ids: string[] = [];
    for (const [id, held] of this.held) if (matches(held.record, filter)) ids.push(id);
    return this.remove(ids);
  }
}
