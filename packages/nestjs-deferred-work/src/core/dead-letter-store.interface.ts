import type { DeadLetter, DeadLetterError, DeadLetterReason } from './dead-letter.interface';

/**
 * A dead letter as a `DeadLetterStore` keeps it: the letter (item, sink, reason, attempts, last error)
 * plus its id, the first and last error, and how often it was redriven.
 */
export interface DeadLetterRecord extends DeadLetter {
  /** `<item id>:<sink>`: one record per item and sink; a redriven item dead-lettered again replaces its record. */
  id: string;
  /** The first error the item met (kept across redrives), when there was one. */
  firstError?: DeadLetterError;
  /** The last error, when there was one. */
  lastError?: DeadLetterError;
  /** When the item was first dead-lettered (epoch ms); `at` is the last time. */
  firstAt: number;
  /** How many times it was redriven before this record was made. Default `0`. */
  redrives: number;
}

/** Which records: every field given must match. */
export interface DeadLetterFilter {
  /** Only the dead letters of this sink. */
  sink?: string;
  /** Only those with this reason. */
  reason?: DeadLetterReason;
  /** Only those whose last error has this code (`code`: a SQLSTATE, errno, HTTP status, Redis reply prefix, AWS code). */
  code?: string;
  /** Only those dead-lettered at or after this time (epoch ms). */
  from?: number;
  /** Only those dead-lettered before this time (epoch ms). */
  to?: number;
}

/** A page of `list()`: a filter, the page size and where the previous page ended. */
export interface DeadLetterQuery extends DeadLetterFilter {
  /** Records per page. Default `100`, at most `1000`. */
  limit?: number;
  /** The `next` of the previous page; omit for the first page. */
  after?: string;
}

/** Records, oldest first, and the cursor of the next page (absent on the last one). */
export interface DeadLetterPage {
  records: DeadLetterRecord[];
  next?: string;
}

/**
 * Where dead letters are kept so they can be listed, redriven, discarded or purged (the `deadLetter`
 * option's `store`). The library ships a memory store, a file store (in the spool directory), a
 * Redis Stream store (`nestjs-deferred-work/redis-streams`) and a SQL table store
 * (`nestjs-deferred-work/sql`); any object of this shape works. Every method may be
 * sync or async; errors it throws are caught and logged, and never reach a response.
 *
 * A store bounds itself (count, bytes, age): the built-in ones drop the oldest records first.
 */
export interface DeadLetterStore {
  /** A name for messages, e.g. `file (/var/lib/app/spool/.dead-letters)`. */
  readonly description: string;
  /** Called once at bootstrap, before the first `add`. */
  open?(): void | Promise<void>;
  /** Keeps records; a record whose `id` is already kept replaces it. */
  add(records: DeadLetterRecord[]): void | Promise<void>;
  /** Records matching the query, oldest first, paged. */
  list(query: DeadLetterQuery): DeadLetterPage | Promise<DeadLetterPage>;
  get(id: string): DeadLetterRecord | undefined | Promise<DeadLetterRecord | undefined>;
  count(filter: DeadLetterFilter): number | Promise<number>;
  /**
   * Removes the records with these ids; returns how many this call removed. A redrive claims each
   * record by removing it and hands it back to its sink only when this returned `1`: with a store the
   * replicas share, a record removed by another process meanwhile must not be counted (one
   * `DELETE … RETURNING`, a row lock, an `XDEL`), or two replicas redrive it both.
   */
  remove(ids: readonly string[]): number | Promise<number>;
  /** Removes every record matching the filter (all with `{}`); returns how many. */
  purge(filter: DeadLetterFilter): number | Promise<number>;
  /** Called at shutdown, after the last `add`. */
  close?(): void | Promise<void>;
}

/** What `DeferredWork.redriveDeadLetters()` did (or, with `dryRun`, would do). */
export interface RedriveResult {
  dryRun: boolean;
  /** Records selected (by ids or filter). */
  matched: number;
  /** Handed back to their sink (with `dryRun`: that would be). */
  redriven: number;
  /** Records not redriven, and why (they stay in the store). */
  skipped: Array<{ id: string; reason: string }>;
}

/** Which dead letters to redrive: these ids, or those matching a filter. */
export type RedriveSelector = { ids: readonly string[] } | { filter: DeadLetterFilter };

/** Options of `DeferredWork.redriveDeadLetters()`. */
export interface RedriveOptions {
  /** Only count what would be redriven; change nothing. Default `false`. */
  dryRun?: boolean;
  /** Items handed back per second, at most. Default: the `deadLetter.redrivePerSecond` option (`100`). */
  perSecond?: number;
}
