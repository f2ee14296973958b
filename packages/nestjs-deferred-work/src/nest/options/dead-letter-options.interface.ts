import type { DeadLetterHandler } from '../../core/dead-letter.interface';
import type { DeadLetterStore } from '../../core/dead-letter-store.interface';

/**
 * Where dead letters are kept and forwarded (the `deadLetter` option in its object form). The short
 * forms `deadLetter: (letters) => …` and `deadLetter: 'sinkName'` mean `{ forward: … }`.
 */
export interface DeadLetterOptions {
  /**
   * Where dead letters are kept, to be listed, redriven, discarded and purged through `DeferredWork`:
   * `'memory'` (lost with the process), `'file'` (in `dir`: survives kill -9 and restarts), your own
   * `DeadLetterStore`, or `false` (only the recent ones of `DeferredWork.deadLetters()`). Default:
   * `'file'` when the module-wide `spool` is configured, `'memory'` otherwise.
   */
  store?: 'memory' | 'file' | DeadLetterStore | false;
  /**
   * Also hand every dead letter to a function, or the items to a sink by name (through its own queue,
   * with its retries; its own dead letters are not forwarded again). Default: none.
   */
  forward?: DeadLetterHandler | string;
  /** Directory of the `'file'` store. Default: `<spool.dir>/.dead-letters`. One process per directory. */
  dir?: string;
  /** Records a built-in store keeps at most; the oldest go first. Default `10000`. */
  maxCount?: number;
  /** Bytes (of the records' JSON) a built-in store keeps at most. Default `67108864` (64 MiB). */
  maxBytes?: number;
  /** Age after which a built-in store drops a record, in ms. Default `604800000` (7 days). */
  maxAgeMs?: number;
  /** Items a redrive hands back per second, at most (`redriveDeadLetters` can override it). Default `100`. */
  redrivePerSecond?: number;
}
