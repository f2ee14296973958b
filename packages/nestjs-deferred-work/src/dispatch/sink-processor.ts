import type { DeferredItem } from '../items/deferred-item.interface';
import { SinkWriteError } from '../errors/sink-write.error';
import type {
  DeferredSink,
  SinkProcessorOptions,
  SinkWriteResult,
} from '../sinks/deferred-sink.interface';
import { retryDelayMs } from './backoff';
import type { DeadLetter, DeadLetterReason } from './dead-letter.interface';
import type { SinkStats } from './stats.interface';

interface Entry {
  item: DeferredItem;
  attempts: number;
  queuedAt: number;
}

/** What a processor reports to its dispatcher. */
export interface ProcessorHooks {
  deadLetter(letters: DeadLetter[]): void;
  writeFailed(sink: string, message: string): void;
}

class WriteTimeoutError extends Error {
  override readonly name = 'WriteTimeoutError';
}

const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === 'string' ? error : JSON.stringify(error);

/**
 * Batches items for one sink, OpenTelemetry-style: a bounded queue, an export when a batch is full
 * or the oldest item has lingered `flushIntervalMs` (on an `unref()`'d timer), one write in flight,
 * a timeout per write, retries with backoff, and dead-letters for what cannot be delivered.
 */
export class SinkProcessor {
  private queue: Entry[] = [];
  private inFlight = 0;
  private inlineInFlight = 0;
  private busy = false;
  private timer: NodeJS.Timeout | undefined;
  private flushers = 0;
  private stopped = false;
  /** Aborted when shutdown's deadline passes: cuts retry waits and in-flight writes short. */
  private readonly hardStop = new AbortController();
  private idleWaiters: Array<() => void> = [];

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

  constructor(
    readonly sink: DeferredSink,
    readonly options: SinkProcessorOptions,
    private readonly hooks: ProcessorHooks,
  ) {}

  /** While flushing or shut down, batches go out at once, without lingering. */
  private get draining(): boolean {
    return this.stopped || this.flushers > 0;
  }

  /** Items queued, in flight or waiting for a retry. */
  get pending(): number {
    return this.queue.length + this.inFlight + this.inlineInFlight;
  }

  /** Items that reached a final state: delivered, dropped or dead-lettered. */
  get settled(): number {
    return this.delivered + this.dropped + this.deadLettered;
  }

  /** Accept an item, or drop (and count) it when the queue is full. Returns whether it was queued. */
  enqueue(item: DeferredItem): boolean {
    this.accepted++;
    if (this.pending >= this.options.maxQueueSize) {
      this.dropped++;
      this.lastDropAt = Date.now();
      return false;
    }
    this.queue.push({ item, attempts: 0, queuedAt: performance.now() });
    this.schedule();
    return true;
  }

  /**
   * Inline mode (testing): write this one item now, bypassing the queue, the linger and the
   * one-write-in-flight rule; one try, then dead-letter. Counted like any other item.
   */
  writeNow(item: DeferredItem): void {
    this.accepted++;
    this.inlineInFlight++;
    const entry: Entry = { item, attempts: 0, queuedAt: performance.now() };
    void this.writeOnce([entry], 1)
      .then(({ retry }) => this.giveUp(retry, 'attempts-exhausted', this.lastError ?? 'write failed'))
      .finally(() => {
        this.inlineInFlight--;
        this.notifyProgress();
      });
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
      inFlight: this.inFlight + this.inlineInFlight,
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
   * Export everything queued now, without lingering, and resolve once `settled` reaches the number
   * accepted at the time of the call, or `deadline` (epoch ms) passes. Resolves with whether it got there.
   */
  async flush(deadline: number): Promise<boolean> {
    const target = this.accepted;
    this.flushers++;
    try {
      while (this.settled < target) {
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
   * Drain until `deadline` (epoch ms), then abort what is in flight and dead-letter whatever is left
   * with reason `shutdown`. Idempotent. Resolves with the number of items dead-lettered by the stop.
   */
  async shutdown(deadline: number): Promise<number> {
    if (this.stopped) return 0;
    this.stopped = true;
    await this.flush(deadline);
    if (this.pending === 0) return 0;
    const before = this.deadLettered;
    this.hardStop.abort(new Error('shutdown deadline reached'));
    // The export loop, cut short by hardStop, dead-letters its in-flight entries and then the queue.
    while (this.busy) await this.waitForProgress(1000);
    this.giveUp(this.queue.splice(0), 'shutdown', 'shutdown deadline reached');
    return this.deadLettered - before;
  }

  private schedule(): void {
    if (this.busy || this.queue.length === 0) return;
    if (this.draining || this.queue.length >= this.options.maxBatchSize) {
      this.clearTimer();
      this.busy = true;
      setImmediate(() => void this.exportLoop());
      return;
    }
    if (this.timer) return;
    const waited = performance.now() - this.queue[0].queuedAt;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.busy || this.queue.length === 0) return;
      this.busy = true;
      void this.exportLoop();
    }, Math.max(0, this.options.flushIntervalMs - waited));
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
        await this.deliver(batch);
        this.notifyProgress();
      } while (this.queue.length >= this.options.maxBatchSize || this.draining);
    } finally {
      this.busy = false;
      this.notifyProgress();
      if (!this.hardStop.signal.aborted) this.schedule();
    }
  }

  /** Writes a batch, retrying failed entries until delivered, dead-lettered or stopped. */
  private async deliver(batch: Entry[]): Promise<void> {
    this.inFlight = batch.length;
    let entries = batch;
    try {
      while (entries.length > 0) {
        if (this.hardStop.signal.aborted) {
          this.giveUp(entries, 'shutdown', 'shutdown deadline reached');
          return;
        }
        const attempt = Math.max(...entries.map((e) => e.attempts)) + 1;
        const { retry, retryAfterMs } = await this.writeOnce(entries, attempt);
        entries = retry;
        this.inFlight = entries.length;
        if (entries.length === 0) break;
        this.retried += entries.length;
        await this.sleep(retryDelayMs(attempt, this.options, retryAfterMs));
      }
    } finally {
      this.inFlight = 0;
    }
  }

  /** One write of `entries`; counts what got through and returns what should be retried. */
  private async writeOnce(entries: Entry[], attempt: number): Promise<{ retry: Entry[]; retryAfterMs?: number }> {
    for (const entry of entries) entry.attempts++;
    this.writes++;
    const controller = new AbortController();
    const timeout = setTimeout(
      () => controller.abort(new WriteTimeoutError(`write timed out after ${this.options.writeTimeoutMs} ms`)),
      this.options.writeTimeoutMs,
    );
    const onStop = () => controller.abort(this.hardStop.signal.reason);
    this.hardStop.signal.addEventListener('abort', onStop, { once: true });
    const started = performance.now();
    let result: void | SinkWriteResult;
    try {
      const items = entries.map((e) => e.item);
      let write: Promise<void | SinkWriteResult>;
      try {
        // Called synchronously, so an inline-mode write does its synchronous part right away.
        write = Promise.resolve(this.sink.write(items as never, { signal: controller.signal, attempt }));
      } catch (error) {
        write = Promise.reject(error);
      }
      write.catch(() => undefined); // a write that settles after its timeout must not become unhandled
      result = await Promise.race([write, rejectOnAbort(controller.signal)]);
    } catch (error) {
      this.lastWriteMs = performance.now() - started;
      const retryable = !(error instanceof SinkWriteError) || error.retryable;
      const retryAfterMs = error instanceof SinkWriteError ? error.retryAfterMs : undefined;
      this.recordFailure(errorMessage(error));
      return { retry: this.sortFailures(entries, retryable, errorMessage(error)), retryAfterMs };
    } finally {
      clearTimeout(timeout);
      this.hardStop.signal.removeEventListener('abort', onStop);
    }
    this.lastWriteMs = performance.now() - started;
    const failed = result?.failed ?? [];
    if (failed.length === 0) {
      this.delivered += entries.length;
      return { retry: [] };
    }
    this.recordFailure(`${failed.length} of ${entries.length} items failed: ${errorMessage(failed[0].error)}`);
    const failedIndexes = new Set<number>();
    const retry: Entry[] = [];
    for (const failure of failed) {
      const entry = entries[failure.index];
      if (!entry || failedIndexes.has(failure.index)) continue;
      failedIndexes.add(failure.index);
      retry.push(...this.sortFailures([entry], failure.retryable !== false, errorMessage(failure.error)));
    }
    this.delivered += entries.length - failedIndexes.size;
    return { retry, retryAfterMs: result?.retryAfterMs };
  }

  /** Dead-letters failed entries that cannot be retried; returns those that can. */
  private sortFailures(failed: Entry[], retryable: boolean, message: string): Entry[] {
    const retry: Entry[] = [];
    const notRetryable: Entry[] = [];
    const exhausted: Entry[] = [];
    for (const entry of failed) {
      if (!retryable) notRetryable.push(entry);
      else if (entry.attempts >= this.options.maxAttempts || this.hardStop.signal.aborted) exhausted.push(entry);
      else retry.push(entry);
    }
    this.giveUp(notRetryable, 'not-retryable', message);
    this.giveUp(exhausted, this.hardStop.signal.aborted ? 'shutdown' : 'attempts-exhausted', message);
    return retry;
  }

  private giveUp(entries: Entry[], reason: DeadLetterReason, error: string): void {
    if (entries.length === 0) return;
    this.deadLettered += entries.length;
    const at = Date.now();
    this.lastDeadLetterAt = at;
    this.hooks.deadLetter(
      entries.map((e) => ({ item: e.item, sink: this.sink.name, reason, error, attempts: e.attempts, at })),
    );
  }

  private recordFailure(message: string): void {
    this.failedWrites++;
    this.lastError = message;
    this.lastErrorAt = Date.now();
    this.hooks.writeFailed(this.sink.name, message);
  }

  /** Waits `ms`, or less if shutdown's deadline passes. Keeps the process alive only while draining. */
  private sleep(ms: number): Promise<void> {
    const signal = this.hardStop.signal;
    if (signal.aborted || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (!this.draining) timer.unref();
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private waitForProgress(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.idleWaiters.push(done);
    });
  }

  private notifyProgress(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
