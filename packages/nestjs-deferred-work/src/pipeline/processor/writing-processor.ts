import { itemWatch } from '../item-watch';
import type { Entry, Failure } from './entry';
import { takeExpired, withinDeadline } from '../item-budgets';
import { retryDelayMs } from './backoff';
import { guardedWrite } from './guarded-write';
import { writeStop } from './deadline-stop';
import { ProcessorBase } from './processor-base';
import { sortFailures } from './retry-budget';
import { failureOf, failureSummary, noteFirstErrors, outcomeOf, retryAfterOf, watchDelivered } from './write-result';
import { tellObserver } from './write-observer';

/**
 * A processor's writes: one guarded `sink.write` of some entries and its accounting in one
 * synchronous step — what went through, what is retried (and whether the sink is down), what is
 * dead-lettered and why — and a batch's retries: the probe while the sink is down, the entries set
 * aside to lead the next batch when it is up. The batch processor and the inline (testing) processor
 * build on it.
 */
export abstract class WritingProcessor extends ProcessorBase {
  /** The last write failed (in whole or part): the next complete success is a recovery. */
  private failing = false;
  /** The entries of the write in flight, or waiting for its retry (while the sink is down: the probe). */
  protected flight: Entry[] = [];
  /**
   * Entries that failed transiently in a write that otherwise went through: the sink is up, so they
   * do not hold the others back; they lead the next batch instead.
   */
  protected again: Entry[] = [];
  /** When the entries of `again` were set aside (epoch ms): they linger from then, like new items. */
  protected againAt = 0;

  /**
   * One write of `entries`. Counts what got through, dead-letters what cannot be retried (after one
   * try when `oneTry`; past its time budget or the `maxAttempts` cap), and hands the entries to retry
   * to `keep` — all in one synchronous step. Resolves with the wait the server asked for, and how many
   * entries went through.
   */
  protected async writeEntries(
    entries: Entry[],
    attempt: number,
    oneTry: boolean,
    keep: (retry: Entry[]) => void,
  ): Promise<{ retryAfterMs?: number; delivered: number }> {
    for (const entry of entries) entry.attempts++;
    this.spool?.markBatch(entries);
    this.counters.writeStarted();
    const started = performance.now();
    let failures: Failure[];
    let retryAfterMs: number | undefined;
    let cutByShutdown = false;
    // The shutdown's deadline, or an earlier one of the items' (a serverless invocation's): either cuts the write.
    const stop = writeStop(entries, this.hardStop);
    try {
      const items = entries.map((e) => e.item);
      const result = await guardedWrite(this.sink, items, attempt, this.options.writeTimeoutMs, stop, (settled) => this.counters.abandoned(settled));
      try {
        const outcome = outcomeOf(result, entries, this.sink.name);
        failures = outcome.failures;
        this.counters.duplicates += outcome.duplicates;
        retryAfterMs = failures.length > 0 ? retryAfterOf(failures, result?.retryAfterMs) : undefined;
      } catch (error) {
        // A result the pipeline cannot read is the sink's bug: retrying would not read it better.
        failures = entries.map((entry) => failureOf(entry, { error, retryable: false }));
      }
    } catch (error) {
      cutByShutdown = stop.signal.aborted && error === stop.signal.reason;
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
    // A write that ends after the shutdown deadline was in flight when it passed (none starts after it).
    const stopping = this.hardStop.signal.aborted;
    const now = Date.now();
    const delivered = entries.length - failures.length;
    if (!cutByShutdown) this.outage.wrote(delivered, failures.filter((failure) => failure.retryable).length, now, this.seq);
    const requeues = this.spool?.requeues === true && !oneTry && !stopping;
    const sorted = sortFailures(failures, this.options, this.outage, { oneTry, stopping, requeues }, now);
    this.counters.delivered += delivered;
    const failed = failures.length === 0 ? undefined : new Set(failures.map((failure) => failure.entry));
    for (const entry of entries) if (!failed?.has(entry)) this.counters.kind(entry.item.kind).delivered++;
    if (this.spool) this.spool.ack(failed === undefined ? entries : entries.filter((entry) => !failed.has(entry)));
    if (itemWatch.watching > 0) watchDelivered(entries, failures);
    const retry = sorted.retry;
    // To the back of the spool (still pending, on disk, its record left in place); an entry without a record is retried here.
    if (sorted.requeue.length > 0) for (const entry of this.spool!.requeue(sorted.requeue)) retry.push(entry);
    keep(retry);
    if (this.budget) {
      this.releaseHeld(entries);
      for (const entry of retry) this.budget.hold(entry);
    }
    const letters = [
      ...this.bury(sorted.notRetryable, 'not-retryable'),
      // A write cut by the deadline may have been delivered: its entries are told apart from those never sent.
      ...this.bury(sorted.exhausted, stopping ? 'shutdown-in-flight' : 'attempts-exhausted'),
      ...this.bury(sorted.expired, 'expired'),
    ];
    this.reportWrite(summary, failures.length === 0);
    if (letters.length > 0) this.hooks.deadLetter(letters);
    this.noteSettled();
    this.notifyProgress();
    if (this.hooks.observer) tellObserver(this.hooks.observer, this.sink.name, this.counters.lastWriteMs, entries, failed, failures[0]?.code, ended);
    return { retryAfterMs, delivered };
  }

  /** After entries settled: the outage ends once the backlog held when the sink came back has drained. */
  protected noteSettled(): void {
    if (this.outage.since !== undefined) this.outage.settled(this.oldestPendingSeq());
  }

  /** The seq of the oldest entry still pending (`Infinity` when none). */
  protected oldestPendingSeq(): number {
    return this.pending > 0 ? 0 : Number.POSITIVE_INFINITY;
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

  /**
   * Writes a batch. While the sink is down (the write delivered nothing), its failed entries are
   * retried here with backoff — the probe — until delivered, dead-lettered or stopped, and the rest
   * wait; when the write went through in part, its transient failures lead the next batch instead
   * (unless the server asked for a wait).
   */
  protected async deliver(batch: Entry[]): Promise<void> {
    this.flight = batch;
    const keep = (retry: Entry[]) => {
      this.flight = retry;
    };
    while (this.flight.length > 0) {
      const entries = this.flight;
      if (this.hardStop.signal.aborted) {
        this.flight = [];
        this.buryAtDeadline(entries);
        this.notifyProgress();
        return;
      }
      // Past their own deadline (a serverless invocation's): expired here, never written again.
      this.expire(takeExpired(entries, Date.now()));
      if (entries.length === 0) break;
      let attempt = 0;
      for (const entry of entries) if (entry.attempts > attempt) attempt = entry.attempts;
      attempt++;
      const { retryAfterMs, delivered } = await this.writeEntries(entries, attempt, false, keep);
      if (this.flight.length === 0) break;
      this.counters.retried += this.flight.length;
      for (const entry of this.flight) this.counters.kind(entry.item.kind).retried++;
      if (delivered > 0 && retryAfterMs === undefined) {
        this.again = this.flight.concat(this.again);
        this.againAt = Date.now();
        this.flight = [];
        break;
      }
      await this.sleep(withinDeadline(retryDelayMs(attempt, this.options, retryAfterMs), this.flight));
    }
  }
}
