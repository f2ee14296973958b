import { itemWatch } from '../item-watch';
import type { DeadLetter, DeadLetterReason } from '../../core/dead-letter.interface';
import { errorMessage } from '../../core/error-message';
import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import type { SinkStats } from '../../core/stats.interface';
import { sleepUnlessAborted } from '../sleep';
import type { Entry, Failure } from './entry';
import { guardedWrite } from './guarded-write';
import { HardStop } from './hard-stop';
import { type KindCounts, kindCountsOf, SinkCounters } from './sink-counters';
import type { SinkSpool } from './sink-spool';
import { failureOf, failureSummary, outcomeOf, retryAfterOf } from './write-result';
import type { WriteObserverSource } from './write-observer';

/** What a processor reports to its dispatcher (and, through `observer`, to the library's own metrics). */
export interface ProcessorHooks extends Partial<WriteObserverSource> {
  deadLetter(letters: DeadLetter[]): void;
  writeFailed(sink: string, message: string): void;
  /** A write went through completely after one or more failed (called once per episode). */
  recovered?(sink: string): void;
}

/**
 * What the batch processor and the inline (testing) processor share: the counters, the guarded
 * write of some entries and its accounting, dead letters, and the waits of `flush()` and `shutdown()`.
 *
 * Every change of an entry's state (delivered, dead-lettered, out of flight) happens in one
 * synchronous step, so `accepted = delivered + pending + dropped + deadLettered` holds at every moment.
 */
export abstract class ProcessorBase {
  protected readonly counters = new SinkCounters();
  /** Aborted when shutdown's deadline passes: cuts retry waits and in-flight writes short. */
  protected readonly hardStop = new HardStop();
  /** Shutdown finished: new items are dead-lettered (`closed`) at once. */
  protected closedForGood = false;
  /** Why it closed, when not at the application's shutdown: e.g. the app closed the sink's client. */
  closedBecause: string | undefined;
  protected seq = 0;
  private waiters: Array<() => void> = [];
  /** The last write failed (in whole or part): the next complete success is a recovery. */
  private failing = false;

  /**
   * Entries a spool kept at shutdown's deadline instead of dead-lettering them: still pending (their
   * records stay on disk, not acked, and the next start delivers them).
   */
  protected kept = 0;

  constructor(
    readonly sink: DeferredSink,
    readonly options: SinkProcessorOptions,
    protected readonly hooks: ProcessorHooks,
    /** The sink's disk spool, when it has one (`spool` option). */
    readonly spool?: SinkSpool,
  ) {}

  /** Items queued, in flight or waiting for a retry (with a spool, also those waiting on disk). */
  abstract get pending(): number;
  /** Of `pending`, what a drain can deliver now (not what a spool keeps for the next start, nor a backlog not started yet). */
  get drainable(): number {
    return this.pending;
  }
  /** Accept an item; `false` when it was dropped (queue full) or refused (after shutdown), counted either way. */
  abstract enqueue(item: DeferredItem): boolean;
  /** Resolves `true` once every item accepted before the call settled, `false` at `deadline` (epoch ms). */
  abstract flush(deadline: number): Promise<boolean>;
  /** Drains until `deadline`, then gives up on the rest; resolves with how many it gave up on. Idempotent. */
  abstract shutdown(deadline: number): Promise<number>;
  protected abstract get queueDepth(): number;
  protected abstract get inFlight(): number;

  /** Whether shutdown has finished (new items are refused). */
  get closed(): boolean {
    return this.closedForGood;
  }

  stats(): SinkStats {
    const stats = this.counters.snapshot(this.pending, this.queueDepth, this.inFlight);
    const host = this.sink.hostStats?.();
    if (host) stats.host = host;
    if (this.spool) stats.spool = this.spool.stats();
    const oldest = this.oldestHeldCreatedAt();
    stats.oldestPendingAgeMs = oldest === undefined ? 0 : Math.max(0, Date.now() - oldest);
    return stats;
  }

  /** When the oldest item held in memory was deferred (epoch ms), if any is held. */
  protected oldestHeldCreatedAt(): number | undefined {
    return undefined;
  }

  /** Whether an item handed over now would be queued rather than dropped for want of room. */
  get hasRoom(): boolean {
    return this.spool !== undefined || this.pending < this.options.maxQueueSize;
  }

  /** Hands a dead letter's item back (a redrive): accepted again, counted in `redriven` too. Returns whether it was queued. */
  redrive(item: DeferredItem): boolean {
    this.counters.redriven++;
    return this.enqueue(item);
  }

  /** This sink's counts by item kind, for the kinds it has seen. */
  kindCounts(): Record<string, KindCounts> {
    return kindCountsOf(this.counters);
  }

  /** Counts an item in; returns its entry, or `undefined` when shutdown has finished (then it is dead-lettered as `closed`). */
  protected accept(item: DeferredItem): Entry | undefined {
    this.counters.accepted++;
    this.counters.kind(item.kind).accepted++;
    const entry: Entry = { item, attempts: 0, seq: ++this.seq };
    if (this.hooks.observer?.delivered) entry.acceptedAt = performance.now();
    if (!this.closedForGood) return entry;
    const message = `deferred after ${this.closedBecause ?? 'the application shut down'}`;
    this.hooks.deadLetter(this.bury([{ entry, retryable: false, message }], 'closed'));
    return undefined;
  }

  /**
   * One write of `entries`. Counts what got through, dead-letters what cannot be retried (after one
   * try when `oneTry`), and hands the entries to retry to `keep` — all in one synchronous step.
   */
  protected async writeEntries(
    entries: Entry[],
    attempt: number,
    oneTry: boolean,
    keep: (retry: Entry[]) => void,
  ): Promise<{ retryAfterMs?: number }> {
    for (const entry of entries) entry.attempts++;
    this.spool?.markBatch(entries);
    this.counters.writeStarted();
    const started = performance.now();
    let failures: Failure[];
    let retryAfterMs: number | undefined;
    let cutByShutdown = false;
    try {
      const items = entries.map((e) => e.item);
      const result = await guardedWrite(this.sink, items, attempt, this.options.writeTimeoutMs, this.hardStop, (settled) => this.counters.abandoned(settled));
      const outcome = outcomeOf(result, entries, this.sink.name);
      failures = outcome.failures;
      this.counters.duplicates += outcome.duplicates;
      retryAfterMs = failures.length > 0 ? retryAfterOf(failures, result?.retryAfterMs) : undefined;
    } catch (error) {
      cutByShutdown = this.hardStop.signal.aborted && error === this.hardStop.signal.reason;
      // Every entry failed the same way: the one failure shape, read from the error.
      failures = entries.map((entry) => failureOf(entry, { error }));
      retryAfterMs = failures[0]?.retryAfterMs;
    }
    const ended = performance.now();
    this.counters.lastWriteMs = ended - started;
    this.counters.writeEnded();
    if (failures.length > 0) noteFirstErrors(failures);
    // A write cut short by the shutdown deadline is not the sink's failure: keep its last real error.
    const summary = failures.length > 0 && !cutByShutdown ? failureSummary(failures, entries.length) : undefined;
    if (summary !== undefined) this.counters.failedWrite(summary, failures[0].code);
    // From here to the end: one synchronous step, so the counters always add up.
    const stopping = this.hardStop.signal.aborted;
    const retry: Entry[] = [];
    const notRetryable: Failure[] = [];
    const exhausted: Failure[] = [];
    const requeue: Entry[] = [];
    const requeues = this.spool?.requeues === true && !oneTry && !stopping;
    for (const failure of failures) {
      if (!failure.retryable) notRetryable.push(failure);
      else if (requeues && failure.entry.attempts >= this.options.maxAttempts) requeue.push(failure.entry);
      else if (oneTry || stopping || failure.entry.attempts >= this.options.maxAttempts) exhausted.push(failure);
      else retry.push(failure.entry);
    }
    this.counters.delivered += entries.length - failures.length;
    const failed = failures.length === 0 ? undefined : new Set(failures.map((failure) => failure.entry));
    for (const entry of entries) if (!failed?.has(entry)) this.counters.kind(entry.item.kind).delivered++;
    if (this.spool) this.ackDelivered(entries, failures);
    if (itemWatch.watching > 0) watchDelivered(entries, failures);
    // To the back of the spool (still pending, on disk, its record left in place); an entry without a record is retried here.
    if (requeue.length > 0) for (const entry of this.spool!.requeue(requeue)) retry.push(entry);
    keep(retry);
    const letters = [...this.bury(notRetryable, 'not-retryable'), ...this.bury(exhausted, stopping ? 'shutdown' : 'attempts-exhausted')];
    this.reportWrite(summary, failures.length === 0);
    if (letters.length > 0) this.hooks.deadLetter(letters);
    this.notifyProgress();
    this.tellObserver(entries, failed, failures, ended);
    return { retryAfterMs };
  }

  /**
   * Tells the write observer (if any) of a write and of its delivered entries' lag, once the write is
   * accounted for; an observer that throws is ignored (metrics never break delivery).
   */
  private tellObserver(entries: Entry[], failed: Set<Entry> | undefined, failures: Failure[], ended: number): void {
    const observer = this.hooks.observer;
    if (!observer) return;
    try {
      observer.wrote(this.sink.name, this.counters.lastWriteMs!, entries.length, failures.length, failures[0]?.code);
      if (observer.delivered) {
        for (const entry of entries) {
          if (entry.acceptedAt !== undefined && !failed?.has(entry)) observer.delivered(this.sink.name, entry.item.kind, ended - entry.acceptedAt);
        }
      }
    } catch {
      // A metrics library refusing a value: the write stays accounted for; nothing else to do here.
    }
  }

  private reportWrite(summary: string | undefined, complete: boolean): void {
    if (summary !== undefined) {
      this.failing = true;
      this.hooks.writeFailed(this.sink.name, summary);
    } else if (complete) {
      this.counters.succeeded();
      if (!this.failing) return;
      this.failing = false;
      this.hooks.recovered?.(this.sink.name);
    }
  }

  /** Acks in the spool the entries of a write that went through. */
  private ackDelivered(entries: Entry[], failures: Failure[]): void {
    if (failures.length === 0) return this.spool!.ack(entries);
    const failed = new Set(failures.map((failure) => failure.entry));
    this.spool!.ack(entries.filter((entry) => !failed.has(entry)));
  }

  /**
   * Counts failures as dead letters and returns the letters (the caller hands them to the hooks); with
   * a spool, acks them there — except at shutdown's deadline, when the spool keeps them for the next
   * start instead (they stay pending, and no letter is made).
   */
  protected bury(failures: Failure[], reason: DeadLetterReason): DeadLetter[] {
    if (failures.length === 0) return [];
    if (this.spool) {
      const entries = failures.map((failure) => failure.entry);
      if (reason === 'shutdown' && entries.every((entry) => entry.spoolSeq)) {
        this.kept += entries.length;
        this.spool.keep(entries.length);
        if (itemWatch.watching > 0) for (const entry of entries) itemWatch.settled(entry.item, 'kept');
        return [];
      }
      this.spool.ack(entries);
    }
    const at = this.counters.buried(failures.length, reason);
    for (const failure of failures) this.counters.kind(failure.entry.item.kind).deadLettered++;
    if (itemWatch.watching > 0) for (const failure of failures) itemWatch.settled(failure.entry.item, 'dead-lettered');
    return failures.map(({ entry, message, code }) => {
      const letter: DeadLetter = { item: entry.item, sink: this.sink.name, reason, error: message, attempts: entry.attempts, at };
      if (code !== undefined) letter.code = code;
      if (entry.firstError && entry.attempts > 1) letter.firstError = entry.firstError;
      return letter;
    });
  }

  /** Last line of defence: entries caught in an unexpected error (already taken out by the caller) are dead-lettered, never lost. */
  protected failInternally(stranded: Entry[], error: unknown): void {
    const message = `internal error: ${errorMessage(error)}`;
    this.hooks.deadLetter(this.bury(stranded.map((entry) => ({ entry, retryable: false, message })), 'not-retryable'));
    this.hooks.writeFailed(this.sink.name, message);
    this.notifyProgress();
  }

  /** Counts spooled items that could not be read back from disk as dead letters (no item to show). */
  protected buryUnreadable(count: number): void {
    if (count === 0) return;
    this.counters.buried(count, 'unreadable');
    this.hooks.writeFailed(this.sink.name, `${count} spooled item(s) could not be read back from disk`);
  }

  /** Dead-letters entries given up on at shutdown's deadline (a spool keeps them instead). */
  protected buryAtDeadline(entries: Entry[]): void {
    this.hooks.deadLetter(this.bury(entries.map((entry) => ({ entry, retryable: false, message: 'shutdown deadline reached' })), 'shutdown'));
  }

  /** Waits `ms`, or less if shutdown's deadline passes. Never keeps the process alive by itself. */
  protected sleep(ms: number): Promise<void> {
    return sleepUnlessAborted(ms, this.hardStop.signal);
  }

  /** Resolves on the next settled entry or after `ms`; keeps the process alive (flush and drain wait here). */
  protected waitForProgress(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  protected notifyProgress(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Tells the watchers of a write's entries that went through. */
function watchDelivered(entries: readonly Entry[], failures: readonly Failure[]): void {
  const failed = failures.length === 0 ? undefined : new Set(failures.map((failure) => failure.entry));
  for (const entry of entries) if (!failed?.has(entry)) itemWatch.settled(entry.item, 'delivered');
}

/** Keeps each failed entry's first error (its dead letter shows the first and the last). */
function noteFirstErrors(failures: readonly Failure[]): void {
  const at = Date.now();
  for (const { entry, message, code } of failures) entry.firstError ??= code === undefined ? { message, at } : { message, code, at };
}
