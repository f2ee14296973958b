import type { DeadLetterRecord } from '../../core/dead-letter-store.interface';
import { DeadLetterIndex, type DeadLetterBounds } from './dead-letter-index';
import { recordBytes } from './dead-letter-record';
import { IndexedDeadLetterStore } from './indexed-dead-letter.store';

/**
 * Dead letters in memory: bounded by count, bytes (of their JSON) and age, the oldest dropped first.
 * Lost when the process ends; the default when no spool is configured.
 */
export class MemoryDeadLetterStore extends IndexedDeadLetterStore {
  readonly description = 'memory';
  /** @internal */
  protected readonly index: DeadLetterIndex;

  constructor(bounds: DeadLetterBounds) {
    super();
    this.index = new DeadLetterIndex(bounds);
  }

  add(records: DeadLetterRecord[]): void {
    for (const record of records) this.index.put(record, recordBytes(record));
  }
}
