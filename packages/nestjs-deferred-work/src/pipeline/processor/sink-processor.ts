import { AsyncResource } from 'node:async_hooks';
import type { DeferredItem } from '../items/deferred-item.interface';
import { SinkWriteError } from '../errors/sink-write.error';
import type { DeferredSink, SinkProcessorOptions, SinkWriteResult } from '../sinks/deferred-sink.interface';
import { retryDelayMs } from './backoff';
import { sleepUnlessAborted } from './sleep';
import { errorMessage } from './error-message';
import type { DeadLetter, DeadLetterReason } from './dead-letter.interface';
import type { SinkStats } from './stats.interface';

interface Entry {
  item: DeferredItem;
  attempts: number;
  /** Acceptance order; `flush()` waits for every entry accepted before it was called. */
  seq: number;
  /** Written by `writeNow` (inline mode): one try, outside the queue. */
  inline: boolean;
}

interface Failure {
  entry: Entry;
  retryable: boolean;
  message: string;
}

/** What a processor reports to its dispatcher. */
export interface ProcessorHooks {
  deadLetter(letters: DeadLetter[]): void;
  writeFailed(sink: string, message: string): void;
  /** A write went through completely after one or more failed (called once per episode). */
  recovered?(sink: string): void;
}

class WriteTimeoutError extends Error {
  override readonly name = 'WriteTimeoutError';
}

/** After a write's timeout, how long to let it settle before the next write may start. */
const ABORT_GRACE_MS = 1000;

/**
 * Batches items for one sink, OpenTelemetry-style: a bounded queue, an export when a batch is full
 * or the oldest item has lingered `flushIntervalMs` (on an `unref()`'d timer), one write in flight,
 * a timeout per write, retries with backoff, and dead-letters for what cannot be delivered.
 *
 * Every change of an entry's state (delivered, dead-lettered, out of flight) happens in one
 * synchronous step, so `accepted = delivered + pending + dropped + deadLettered` holds at every moment.
 */
export class SinkProcessor {
  private queue: Entry[] = [];
  /** The entries of the write in flight, or waiting for its retry. */
  private flight: Entry[] = [];
  private readonly inline = new Set<Entry>();
  private busy = false;
  private timer: NodeJS.Timeout | undefined;
  private flushers = 0;
  private stopped = false;
  /** Shutdown finished: new items are dead-lettered (`closed`) at once. */
  private closedForGood = false;
  /** Aborted when shutdown's deadline passes: cuts retry waits and in-flight writes short. */
  private readonly hardStop = new AbortController();
  private waiters: Array<() => void> = [];
  private seq = 0;
  /** Exports run in the async context the processor was created in, never in a request's. */
  private readonly startExport: () => void;
  private readonly onTimer: () => void;

  private accepted = 0;
  private delivered = 0;
  private dropped = 0;
  private deadLettered = 0;
  private retried = 0;
  private writes = 0;
  private failedWrites = 0;
  private lastError: string | undefined;
  private lastErrorAt: number | undefined;
  private lastWriteMs: number | undefined;
  private lastDropAt: number | undefined;
  private lastDeadLetterAt: number | undefined;
  /** The last write failed (in whole or part): the next complete success is a recovery. */
  private failing = false;

  constructor(
    readonly sink: DeferredSink,
    readonly options: SinkProcessorOptions,
    private readonly hooks: ProcessorHooks,
  ) {
    this.startExport = AsyncResource.bind(() => void this.exportLoop());
    this.onTimer = AsyncResource.bind(() => {
      this.timer = undefined;
      if (this.busy || this.queue.length === 0) return;
      this.busy = true;
      void this.exportLoop();
    });
  }

  /** While flushing or shut down, batches go out at once, without lingering. */
  private get draining(): boolean {
    return this.stopped || this.flushers > 0;
  }

  /** Whether shutdown has finished (new items are refused). */
  get closed(): boolean {
    return this.closedForGood;
  }

  /** Items queued, in flight or waiting for a retry. */
  get pending(): number {
    return this.queue.length + this.flight.length + this.inline.size;
  }

  /** Accept an item, or drop (and count) it when the queue is full. Returns whether it was queued. */
  enqueue(item: DeferredItem): boolean {
    this.accepted++;
    const entry: Entry = { item, attempts: 0, seq: ++this.seq, inline: false };
    if (this.closedForGood) {
      this.hooks.deadLetter(this.bury([{ entry, retryable: false, message: 'deferred after the application shut down' }], 'closed'));
      return false;
    }
    if (this.pending >= this.options.maxQueueSize) {
      this.dropped++;
      this.lastDropAt = Date.now();
      return false;
    }
    this.queue.push(entry);
    this.schedule();
    return true;
  }

  /**
   * Inline mode (testing): write this one item now, bypassing the queue, the linger and the
   * one-write-in-flight rule; one try, then dead-letter. Counted like any other item. Returns
   * whether it was written (`false` after shutdown).
   */
  writeNow(item: DeferredItem): boolean {
    this.accepted++;
    const entry: Entry = { item, attempts: 0, seq: ++this.seq, inline: true };
    if (this.closedForGood) {
      this.hooks.deadLetter(this.bury([{ entry, retryable: false, message: 'deferred after the application shut down' }], 'closed'));
      return false;
    }
    this.inline.add(entry);
    void this.writeOnce([entry], 1).catch((error: unknown) => this.failInternally([entry], error));
    return true;
  }

  stats(): SinkStats {
    return {
      accepted: this.accepted,
      delivered: this.delivered,
      pending: this.pending,
      dropped: this.dropped,
      deadLettered: this.deadLettered,
      retried: this.retried,
      queueDepth: this.queue.length,
      inFlight: this.flight.length + this.inline.size,
      writes: this.writes,
      failedWrites: this.failedWrites,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastWriteMs: this.lastWriteMs,
      lastDropAt: this.lastDropAt,
      lastDeadLetterAt: this.lastDeadLetterAt,
    };
  }

  /**
   * Export everything queued now, without lingering, and resolve `true` once every item accepted
   * before the call has been delivered or dead-lettered — or `false` when `deadline` (epoch ms) passes.
   */
  async flush(deadline: number): Promise<boolean> {
    const target = this.seq;
    this.flushers++;
    try {
      while (this.oldestPendingSeq() <= target) {
        this.schedule();
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await this.waitForProgress(left);
      }
      return true;
    } finally {
      this.flushers--;
    }
  }

  /**
   * Drain until nothing is pending or `deadline` (epoch ms) passes — items arriving meanwhile
   * included — then abort what is in flight and dead-letter the rest with reason `shutdown`. From then
   * on new items are dead-lettered at once. Idempotent. Resolves with the number given up on.
   */
  async shutdown(deadline: number): Promise<number> {
    if (this.stopped) return 0;
    this.stopped = true;
    while (this.pending > 0 && Date.now() < deadline) await this.flush(deadline);
    const before = this.deadLettered;
    if (this.pending > 0) {
      this.hardStop.abort(new Error('shutdown deadline reached'));
      // The export loop, cut short, dead-letters its in-flight entries and then the queue.
      while (this.busy || this.inline.size > 0) await this.waitForProgress(1000);
      const rest = this.queue.splice(0).map((entry) => ({ entry, retryable: false, message: 'shutdown deadline reached' }));
      this.hooks.deadLetter(this.bury(rest, 'shutdown'));
    }
    this.closedForGood = true;
    this.clearTimer();
    return this.deadLettered - before;
  }

  private oldestPendingSeq(): number {
    let oldest = this.queue.length > 0 ? this.queue[0].seq : Number.POSITIVE_INFINITY;
    for (const entry of this.flight) if (entry.seq < oldest) oldest = entry.seq;
    for (const entry of this.inline) if (entry.seq < oldest) oldest = entry.seq;
    return oldest;
  }

  private schedule(): void {
    if (this.busy || this.queue.length === 0 || this.hardStop.signal.aborted) return;
    if (this.draining || this.queue.length >= this.options.maxBatchSize) {
      this.clearTimer();
      this.busy = true;
      setImmediate(this.startExport);
      return;
    }
    if (this.timer) return;
    // The linger counts from when the oldest queued item was created (ms resolution is enough).
    const waited = Date.now() - this.queue[0].item.createdAt;
    this.timer = setTimeout(this.onTimer, Math.max(0, this.options.flushIntervalMs - waited));
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Runs with `busy` set; exports batch after batch while there is a full batch or we are draining. */
  private async exportLoop(): Promise<void> {
    try {
      do {
        const batch = this.queue.splice(0, this.options.maxBatchSize);
        if (batch.length === 0) break;
        try {
          await this.deliver(batch);
        } catch (error) {
          // A bug here, or in a sink's result: the batch must not vanish from the counts.
          this.failInternally(this.flight, error);
        }
      } while (this.queue.length >= this.options.maxBatchSize || this.draining);
    } finally {
      this.busy = false;
      this.notifyProgress();
      this.schedule();
    }
  }

  /** Writes a batch, retrying failed entries until delivered, dead-lettered or stopped. */
  private async deliver(batch: Entry[]): Promise<void> {
    this.flight = batch;
    while (this.flight.length > 0) {
      const entries = this.flight;
      if (this.hardStop.signal.aborted) {
        const failures = entries.map((entry) => ({ entry, retryable: false, message: 'shutdown deadline reached' }));
        this.flight = [];
        this.hooks.deadLetter(this.bury(failures, 'shutdown'));
        this.notifyProgress();
        return;
      }
      let attempt = 0;
      for (const entry of entries) if (entry.attempts > attempt) attempt = entry.attempts;
      attempt++;
      const { retryAfterMs } = await this.writeOnce(entries, attempt);
      if (this.flight.length === 0) break;
      this.retried += this.flight.length;
      await this.sleep(retryDelayMs(attempt, this.options, retryAfterMs));
    }
  }

  /**
   * One write of `entries` (all of `flight`, or one inline entry). Counts what got through,
   * dead-letters what cannot be retried, and leaves only the entries to retry in `flight`.
   */
  private async writeOnce(entries: Entry[], attempt: number): Promise<{ retryAfterMs?: number }> {
    for (const entry of entries) entry.attempts++;
    this.writes++;
    const started = performance.now();
    let failures: Failure[];
    let retryAfterMs: number | undefined;
    let cutByShutdown = false;
    try {
      const result = await this.awaitWrite(entries.map((e) => e.item), attempt);
      failures = this.failuresOf(result, entries);
      retryAfterMs = failures.length > 0 ? result?.retryAfterMs : undefined;
    } catch (error) {
      cutByShutdown = this.hardStop.signal.aborted && error === this.hardStop.signal.reason;
      const retryable = !(error instanceof SinkWriteError) || error.retryable;
      retryAfterMs = error instanceof SinkWriteError ? error.retryAfterMs : undefined;
      const message = errorMessage(error);
      failures = entries.map((entry) => ({ entry, retryable, message }));
    }
    this.lastWriteMs = performance.now() - started;
    let summary: string | undefined;
    // A write cut short by the shutdown deadline is not the sink's failure: keep its last real error.
    if (failures.length > 0 && !cutByShutdown) {
      summary =
        failures.length === entries.length
          ? failures[0].message
          : `${failures.length} of ${entries.length} items failed: ${failures[0].message}`;
      this.failedWrites++;
      this.lastError = summary;
      this.lastErrorAt = Date.now();
    }
    // From here to the end: one synchronous step, so the counters always add up.
    const stopping = this.hardStop.signal.aborted;
    const retry: Entry[] = [];
    const notRetryable: Failure[] = [];
    const exhausted: Failure[] = [];
    for (const failure of failures) {
      const { entry } = failure;
      if (!failure.retryable) notRetryable.push(failure);
      else if (entry.inline || stopping || entry.attempts >= this.options.maxAttempts) exhausted.push(failure);
      else retry.push(entry);
    }
    this.delivered += entries.length - failures.length;
    if (entries[0]?.inline) for (const entry of entries) this.inline.delete(entry);
    else this.flight = retry;
    const letters = [...this.bury(notRetryable, 'not-retryable'), ...this.bury(exhausted, stopping ? 'shutdown' : 'attempts-exhausted')];
    if (summary !== undefined) {
      this.failing = true;
      this.hooks.writeFailed(this.sink.name, summary);
    } else if (this.failing && failures.length === 0) {
      this.failing = false;
      this.hooks.recovered?.(this.sink.name);
    }
    if (letters.length > 0) this.hooks.deadLetter(letters);
    this.notifyProgress();
    return { retryAfterMs };
  }

  /** Validates a sink's partial-failure result; a malformed one counts as a failure of the whole batch. */
  private failuresOf(result: void | SinkWriteResult, entries: Entry[]): Failure[] {
    const failed = (result as SinkWriteResult | undefined)?.failed;
    if (failed === undefined || failed === null) return [];
    if (!Array.isArray(failed)) {
      throw new Error(`sink "${this.sink.name}" returned a malformed result ("failed" must be an array of { index, error })`);
    }
    const seen = new Set<number>();
    const failures: Failure[] = [];
    for (const failure of failed) {
      const index = (failure as { index?: unknown } | null)?.index;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= entries.length) {
        throw new Error(`sink "${this.sink.name}" reported a failure with an invalid index (${String(index)})`);
      }
      if (seen.has(index)) continue;
      seen.add(index);
      failures.push({ entry: entries[index], retryable: failure.retryable !== false, message: errorMessage(failure.error) });
    }
    return failures;
  }

  /**
   * Calls the sink with a timeout. On timeout (or shutdown's deadline) the signal is aborted and the
   * write gets a short grace period to settle — if it still succeeds, it counts — so that writes on
   * one sink do not overlap unless a sink ignores its signal.
   */
  private async awaitWrite(items: DeferredItem[], attempt: number): Promise<void | SinkWriteResult> {
    const controller = new AbortController();
    const timeout = setTimeout(
      () => controller.abort(new WriteTimeoutError(`write timed out after ${this.options.writeTimeoutMs} ms`)),
      this.options.writeTimeoutMs,
    );
    timeout.unref();
    const onStop = () => controller.abort(this.hardStop.signal.reason);
    this.hardStop.signal.addEventListener('abort', onStop, { once: true });
    let write: Promise<void | SinkWriteResult>;
    try {
      // Called synchronously, so an inline-mode write does its synchronous part right away.
      write = Promise.resolve(this.sink.write(items as never, { signal: controller.signal, attempt }));
    } catch (error) {
      write = Promise.reject(error);
    }
    write.catch(() => undefined); // a write that settles after its timeout must not become unhandled
    try {
      return await Promise.race([write, rejectOnAbort(controller.signal)]);
    } catch (error) {
      if (!controller.signal.aborted || error !== controller.signal.reason) throw error;
      const grace = this.hardStop.signal.aborted ? 0 : Math.min(ABORT_GRACE_MS, this.options.writeTimeoutMs);
      const late = await settleWithin(write, grace);
      if (late.status === 'fulfilled') return late.value;
      throw late.status === 'rejected' ? late.reason : error;
    } finally {
      clearTimeout(timeout);
      this.hardStop.signal.removeEventListener('abort', onStop);
    }
  }

  /** Counts failures as dead letters and returns the letters (the caller hands them to the hooks). */
  private bury(failures: Failure[], reason: DeadLetterReason): DeadLetter[] {
    if (failures.length === 0) return [];
    this.deadLettered += failures.length;
    const at = Date.now();
    this.lastDeadLetterAt = at;
    return failures.map(({ entry, message }) => ({
      item: entry.item,
      sink: this.sink.name,
      reason,
      error: message,
      attempts: entry.attempts,
      at,
    }));
  }

  /** Last line of defence: entries caught in an unexpected error are dead-lettered, never lost. */
  private failInternally(entries: Entry[], error: unknown): void {
    const message = `internal error: ${errorMessage(error)}`;
    const stranded = entries.filter((entry) => (entry.inline ? this.inline.has(entry) : this.flight.includes(entry)));
    for (const entry of stranded) this.inline.delete(entry);
    this.flight = this.flight.filter((entry) => !stranded.includes(entry));
    this.hooks.deadLetter(this.bury(stranded.map((entry) => ({ entry, retryable: false, message })), 'not-retryable'));
    this.hooks.writeFailed(this.sink.name, message);
    this.notifyProgress();
  }

  /** Waits `ms`, or less if shutdown's deadline passes. Never keeps the process alive by itself. */
  private sleep(ms: number): Promise<void> {
    return sleepUnlessAborted(ms, this.hardStop.signal);
  }

  /** Resolves on the next settled entry or after `ms`; keeps the process alive (flush and drain wait here). */
  private waitForProgress(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private notifyProgress(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function settleWithin<T>(promise: Promise<T>, ms: number): Promise<PromiseSettledResult<T> | { status: 'pending' }> {
  if (ms <= 0) return Promise.resolve({ status: 'pending' });
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ status: 'pending' }), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve({ status: 'fulfilled', value });
      },
      (reason: unknown) => {
        clearTimeout(timer);
        resolve({ status: 'rejected', reason });
      },
    );
  });
}
