import { itemWatch } from '../item-watch';
import type { DeadLetter, DeadLetterReason } from '../../core/dead-letter.interface';
import { errorMessage } from '../../core/error-message';
import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import type { SinkStats } from '../../core/stats.interface';
import { sleepUnlessAborted } from '../sleep';
import { estimatePayloadBytes } from '../../core/items/item-validator';
import { ITEM_OVERHEAD_BYTES } from '../defaults';
import type { Entry, Failure } from './entry';
import { HardStop } from './hard-stop';
import { type KindCounts, kindCountsOf, SinkCounters } from './sink-counters';
import type { SinkSpool } from './sink-spool';
import { lettersOf } from './write-result';
import { ProgressWaiters } from './progress-waiters';
import type { WriteObserverSource } from './write-observer';
import { addState, Outage } from './outage';
import type { QueueBudget, QueueLimit } from './queue-budget';

/** What a processor reports to its dispatcher (and, through `observer`, to the library's own metrics). */
export interface ProcessorHooks extends Partial<WriteObserverSource> {
  deadLetter(letters: DeadLetter[]): void;
  writeFailed(sink: string, message: string): void;
  /** A write went through completely after one or more failed (called once per episode). */
  recovered?(sink: string): void;
}

/**
 * What every processor shares: the counters, accepting an item, what it holds (the byte budget),
 * dead letters, its stats, and the waits of `flush()` and `shutdown()`. The write itself and the
 * sorting of its failures are `WritingProcessor`'s.
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
  private readonly progress = new ProgressWaiters();
  /** Whether the sink is down (every write failing), and the outage until its backlog drained. */
  protected readonly outage = new Outage();

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
    /** What it may hold in memory (bytes, and a count when set); none in inline mode. */
    protected readonly budget?: QueueBudget,
  ) {}

  /** Items queued, in flight or waiting for a retry (with a spool, also those waiting on disk). */
  abstract get pending(): number;
  /** Of `pending`, what a drain can deliver now (not what a spool keeps for the next start, nor a backlog not started yet). */
  get drainable(): number {
    return this.pending;
  }
  /**
   * Accept an item; `false` when it was dropped (no room) or refused (after shutdown), counted either
   * way. `payloadBytes`: its payload's estimated size (`validateItem`'s; estimated here when left out).
   * `since`: when it was accepted, for an item made long before (a redrive); default its `createdAt`.
   */
  abstract enqueue(item: DeferredItem, payloadBytes?: number, since?: number): boolean;
  /** Resolves `true` once every item accepted before the call settled, `false` at `deadline` (epoch ms). */
  abstract flush(deadline: number): Promise<boolean>;
  /** Drains until `deadline`, then gives up on the rest; resolves with how many it gave up on. Idempotent. */
  abstract shutdown(deadline: number): Promise<number>;
  protected abstract get queueDepth(): number;
  protected abstract get inFlight(): number;

  /** Items dead-lettered for `reason` so far. */
  deadLetteredFor(reason: DeadLetterReason): number {
    return this.counters.deadLetteredByReason[reason] ?? 0;
  }

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
    return addState(stats, this.outage, this.budget);
  }

  /** When the oldest item held in memory was deferred (epoch ms), if any is held. */
  protected oldestHeldCreatedAt(): number | undefined {
    return undefined;
  }

  /** Whether an item handed over now would be queued rather than dropped for want of room. */
  get hasRoom(): boolean {
    return this.spool !== undefined || this.budget === undefined || this.budget.hasRoom(this.pending);
  }

  /** What refused the last item dropped for want of room, for the warning (`undefined` when nothing did). */
  get refusal(): { limit: QueueLimit; bytes: number; held: number } | undefined {
    return this.budget?.refusal(this.pending);
  }

  /** Hands a dead letter's item back (a redrive): accepted again, counted in `redriven` too. Returns whether it was queued. */
  redrive(item: DeferredItem): boolean {
    this.counters.redriven++;
    return this.enqueue(item, estimatePayloadBytes(item), Date.now());
  }

  /** This sink's counts by item kind, for the kinds it has seen. */
  kindCounts(): Record<string, KindCounts> {
    return kindCountsOf(this.counters);
  }

  /** Counts an item in; returns its entry, or `undefined` when shutdown has finished (then it is dead-lettered as `closed`). */
  protected accept(item: DeferredItem, payloadBytes = estimatePayloadBytes(item), since?: number): Entry | undefined {
    this.counters.accepted++;
    this.counters.kind(item.kind).accepted++;
    const entry: Entry = { item, attempts: 0, seq: ++this.seq, bytes: payloadBytes + ITEM_OVERHEAD_BYTES };
    if (since !== undefined) entry.since = since;
    if (this.hooks.observer?.delivered) entry.acceptedAt = performance.now();
    if (!this.closedForGood) return entry;
    const message = `deferred after ${this.closedBecause ?? 'the application shut down'}`;
    this.hooks.deadLetter(this.bury([{ entry, retryable: false, message }], 'closed'));
    return undefined;
  }

  /** Entries that left memory (delivered, dead-lettered, sent to the spool): their bytes no longer count. */
  protected releaseHeld(entries: Iterable<Entry>): void {
    this.budget?.release(entries, this.pending);
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
      if ((reason === 'shutdown' || reason === 'shutdown-in-flight') && entries.every((entry) => entry.spoolSeq)) {
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
    return lettersOf(failures, this.sink.name, reason, at);
  }

  /** Last line of defence: entries caught in an unexpected error (already taken out by the caller) are dead-lettered, never lost. */
  protected failInternally(stranded: Entry[], error: unknown): void {
    this.releaseHeld(stranded);
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
    this.releaseHeld(entries);
    this.hooks.deadLetter(this.bury(entries.map((entry) => ({ entry, retryable: false, message: 'shutdown deadline reached' })), 'shutdown'));
  }

  /**
   * Entries whose own deadline passed before they could be delivered (`item-budgets.ts`: a serverless
   * invocation's): to the back of the spool when it takes them (still pending, on disk), else
   * dead-lettered `expired` — in one synchronous step.
   */
  protected expire(entries: Entry[]): void {
    if (entries.length === 0) return;
    this.releaseHeld(entries);
    const unspooled = this.spool?.requeues === true ? this.spool.requeue(entries) : entries;
    if (unspooled !== entries && itemWatch.watching > 0) for (const e of entries) if (!unspooled.includes(e)) itemWatch.settled(e.item, 'kept');
    const message = 'not delivered by the deadline of its serverless invocation';
    this.hooks.deadLetter(this.bury(unspooled.map((entry) => ({ entry, retryable: true, message })), 'expired'));
    this.notifyProgress();
  }

  /** Waits `ms`, or less if shutdown's deadline passes. Never keeps the process alive by itself. */
  protected sleep(ms: number): Promise<void> {
    return sleepUnlessAborted(ms, this.hardStop.signal);
  }

  /** Resolves on the next settled entry or after `ms`; keeps the process alive (flush and drain wait here). */
  protected waitForProgress(ms: number): Promise<void> {
    return this.progress.wait(ms);
  }

  protected notifyProgress(): void {
    this.progress.notify();
  }
}
