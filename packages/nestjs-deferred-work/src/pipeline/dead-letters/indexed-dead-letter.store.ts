import type { DeadLetterFilter, DeadLetterPage, DeadLetterQuery, DeadLetterRecord, DeadLetterStore } from '../../core/dead-letter-store.interface';
import type { DeadLetterIndex } from './dead-letter-index';

/** @internal What the built-in stores share: their records held in a `DeadLetterIndex`, read from it. */
export abstract class IndexedDeadLetterStore implements DeadLetterStore {
  abstract readonly description: string;
  /** @internal */
  protected abstract readonly index: DeadLetterIndex;

  abstract add(records: DeadLetterRecord[]): void;

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
