import type { DeadLetterFilter, DeadLetterPage, DeadLetterQuery, DeadLetterRecord, DeadLetterStore } from '../../core/dead-letter-store.interface';
import { DeadLetterIndex, type DeadLetterBounds } from './dead-letter-index';
import { recordBytes } from './dead-letter-record';

/**
 * Dead letters in memory: bounded by count, bytes (of their JSON) and age, the oldest dropped first.
 * Lost when the process ends; the default when no spool is configured.
 */
export class MemoryDeadLetterStore implements DeadLetterStore {
  readonly description = 'memory';
  private readonly index: DeadLetterIndex;

  constructor(bounds: DeadLetterBounds) {
    this.index = new DeadLetterIndex(bounds);
  }

  add(records: DeadLetterRecord[]): void {
    for (const record of records) this.index.put(record, recordBytes(record));
  }

  list(query: DeadLetterQuery): DeadLetterPage {
    return this.index.list(query);
  }

  get(id: string): DeadLetterRecord | undefined {
    return this.index.get(id);
  }

  count(filter: DeadLetterFilter): number {
    return this.index.count(filter);
  }

  remove(ids: readonly string[]): number {
    return this.index.remove(ids);
  }

  purge(filter: DeadLetterFilter): number {
    return this.index.purge(filter);
  }
}
