import type { DeadLetter } from '../../core/dead-letter.interface';
import type { DeadLetterStore } from '../../core/dead-letter-store.interface';
import { errorMessage } from '../../core/error-message';
import { settleWithin } from '../../core/settle';
import type { ProcessorBase } from '../processor/processor-base';
import type { ResolvedDeferredWorkOptions } from '../resolved-options.interface';
import type { RateLimitedLogger } from '../warnings/rate-limited-logger';
import { recordId, recordOf } from './dead-letter-record';
import { Redrive } from './redrive';

/** How long the shutdown waits for an async store's adds under way. */
const STORE_FLUSH_MS = 5000;

/**
 * @internal
 * Where dead letters go: the ring `DeferredWork.deadLetters()` reads (the last `deadLetterCapacity`),
 * one rate-limited warning per sink, the store (`deadLetter.store`: listed, redriven, purged), and
 * the forward (`deadLetter` as a handler or a sink name) — a handler, or a fallback sink through its
 * own processor.
 */
export class DeadLetterDesk {
  private readonly ring: DeadLetter[] = [];
  /** The store, once opened (an async `open()` is waited for); `undefined` after close. */
  private store: DeadLetterStore | undefined;
  private opening: Promise<unknown> | undefined;
  /** The store's adds under way (an async store): `close()` waits for them, within `STORE_FLUSH_MS`. */
  private readonly adding = new Set<Promise<unknown>>();
  readonly redrive: Redrive | undefined;

  constructor(
    private readonly options: Pick<ResolvedDeferredWorkOptions, 'deadLetterCapacity' | 'deadLetter' | 'deadLetterStore' | 'redrivePerSecond'>,
    private readonly warnings: RateLimitedLogger,
    private readonly processors: ReadonlyMap<string, ProcessorBase>,
  ) {
    const store = options.deadLetterStore;
    if (!store) return;
    // A built-in file store opens synchronously (its lock, its records read back): a failure fails the bootstrap.
    const opened = store.open?.();
    if (opened instanceof Promise) this.opening = opened.catch((error: unknown) => this.storeFailed('open', error));
    this.store = store;
    this.redrive = new Redrive(store, processors, options.redrivePerSecond);
  }

  /** The store dead letters are kept in, for the API (`undefined` with `store: false`). */
  get kept(): DeadLetterStore | undefined {
    return this.options.deadLetterStore;
  }

  /** Waits for an async store's `open()`. */
  ready(): Promise<unknown> {
    return this.opening ?? Promise.resolve();
  }

  /** Closes the store (at shutdown, after the last dead letter). */
  async close(): Promise<void> {
    const store = this.store;
    this.store = undefined;
    if (!store) return;
    await this.flushed();
    if (!store.close) return;
    await this.ready();
    try {
      await store.close();
    } catch (error) {
      this.storeFailed('close', error);
    }
  }

  /**
   * Waits, at most `ms`, for the store's adds under way (an async store); resolves with how many are
   * still under way then (0: every dead letter so far is stored). What a serverless invocation waits
   * for before its environment may be frozen.
   */
  async stored(ms: number): Promise<number> {
    if (this.adding.size === 0) return 0;
    const pending = [...this.adding];
    const done = await settleWithin(Promise.all(pending), Math.max(0, ms), true);
    return done.status === 'pending' ? this.adding.size : 0;
  }

  /** Recent dead letters, oldest first. */
  recent(): readonly DeadLetter[] {
    return [...this.ring];
  }

  add(letters: DeadLetter[]): void {
    if (letters.length === 0) return; // e.g. shutdown() after the export loop already buried everything
    const capacity = this.options.deadLetterCapacity;
    if (capacity > 0) {
      for (const letter of letters) this.ring.push(letter);
      if (this.ring.length > capacity) this.ring.splice(0, this.ring.length - capacity);
    }
    const first = letters[0];
    // Items deferred after shutdown get their own warning (the dispatcher's refused()).
    if (first.reason !== 'closed') this.warn(letters);
    this.keep(letters);
    this.forward(letters);
  }

  /** Into the store, with what a redriven item's earlier record had (its first error, its redrives). */
  private keep(letters: DeadLetter[]): void {
    const store = this.store;
    if (!store) return;
    const records = letters.map((letter) => recordOf(letter, this.redrive?.take(recordId(letter.item.id, letter.sink))));
    const add = () => store.add(records);
    try {
      const added = this.opening ? this.opening.then(add) : add();
      if (added instanceof Promise) {
        const settled = added.catch((error: unknown) => this.storeFailed('add', error));
        this.adding.add(settled);
        const done = () => this.adding.delete(settled);
        void settled.then(done, done);
      }
    } catch (error) {
      this.storeFailed('add', error);
    }
  }

  /**
   * Waits for the store's adds under way — dead letters of the drain's last moments, buried at the
   * shutdown deadline — so that `app.close()` resolves with them stored, not in flight on a client the
   * app may close or a process about to exit. At most `STORE_FLUSH_MS`; past that, says how many.
   */
  private async flushed(): Promise<void> {
    if (this.adding.size === 0) return;
    const pending = [...this.adding];
    const done = await settleWithin(Promise.all(pending), STORE_FLUSH_MS, true);
    if (done.status === 'pending') {
      this.warnings.warn(
        'dead-letter-store:flush',
        `Dead-letter store ${this.options.deadLetterStore?.description ?? ''} had not stored ${pending.length} write(s) of dead letters within ${STORE_FLUSH_MS} ms after the drain; they may be in DeferredWork.deadLetters() only.`,
      );
    }
  }

  private storeFailed(what: string, error: unknown): void {
    this.warnings.warn(
      `dead-letter-store:${what}`,
      `Dead-letter store ${this.options.deadLetterStore?.description ?? ''} failed to ${what}: ${errorMessage(error)}; the letters stay in DeferredWork.deadLetters().`,
    );
  }

  private warn(letters: DeadLetter[]): void {
    const first = letters[0];
    this.warnings.warn(
      `dead:${first.sink}`,
      `${letters.length} item(s) for sink "${first.sink}" dead-lettered (${first.reason}` +
        `${first.error ? `: ${first.error}` : ''}). See DeferredWork.deadLetters() and stats().`,
    );
  }

  private forward(letters: DeadLetter[]): void {
    const target = this.options.deadLetter;
    if (target === undefined) return;
    if (typeof target === 'string') {
      // Through the fallback sink's own processor: one writer per sink, its retries and accounting.
      // Its own dead letters are not forwarded again (no loops); callbacks have nowhere to go.
      // The fallback's own check runs first, as for any item handed to it (it may also prepare the
      // item); an item it refuses stays a dead letter here.
      const fallback = this.processors.get(target)!;
      for (const letter of letters) {
        if (letter.sink === target || letter.item.kind === 'callback') continue;
        try {
          fallback.sink.validate?.(letter.item);
        } catch (error) {
          this.warnings.warn('dead-letter-forward', `A dead letter was not forwarded to sink "${target}": ${errorMessage(error)}`);
          continue;
        }
        fallback.enqueue(letter.item);
      }
      // The dead letters' own records are already confirmed in their sink's spool: a spooled fallback
      // writes them now, not at the end of the turn, so a crash in between cannot lose them.
      fallback.spool?.writeNow();
      return;
    }
    Promise.resolve()
      .then(() => target(letters))
      .catch((error: unknown) =>
        this.warnings.warn(
          'dead-letter-handler',
          `Dead-letter handler failed: ${error instanceof Error ? error.message : String(error)}; the letters stay in DeferredWork.deadLetters().`,
        ),
      );
  }
}
