import { itemWatch } from '../item-watch';
import { AsyncResource } from 'node:async_hooks';
import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import type { Entry } from './entry';
import type { ProcessorHooks } from './processor-base';
import { WritingProcessor } from './writing-processor';
import type { SinkSpool } from './sink-spool';
import { PROCESSOR_DEFAULTS } from '../defaults';
import { QueueBudget, TotalQueueBytes } from './queue-budget';
import { BacklogReader } from './backlog-reader';
import { takeBatch } from './batches';

export type { ProcessorHooks } from './processor-base';

/**
 * Batches items for one sink, OpenTelemetry-style: a bounded queue, an export when a batch is full
 * or the oldest item has lingered `flushIntervalMs` (on an `unref()`'d timer), one write in flight,
 * a timeout per write, retries with backoff, and dead-letters for what cannot be delivered.
 */
export class SinkProcessor extends WritingProcessor {
  private queue: Entry[] = [];
  private busy = false;
  private timer: NodeJS.Timeout | undefined;
  private flushers = 0;
  private stopped = false;
  /** Exports run in the async context the processor was created in, never in a request's. */
  private readonly startExport: () => void;
  private readonly onTimer: () => void;
  /** With a spool: its backlog on disk, read back as the queue empties. */
  private readonly backlog: BacklogReader | undefined;

  constructor(sink: DeferredSink, options: SinkProcessorOptions, hooks: ProcessorHooks, spool?: SinkSpool, budget?: QueueBudget) {
    super(sink, options, hooks, spool, budget ?? new QueueBudget(options.maxQueueBytes ?? PROCESSOR_DEFAULTS.maxQueueBytes, options.maxQueueSize, new TotalQueueBytes(Number.POSITIVE_INFINITY)));
    if (spool) {
      // What a previous process left is accepted again by this one, and waits on disk until start().
      this.counters.accepted += spool.replayed;
      this.seq = spool.lastReplaySeq;
      this.backlog = new BacklogReader(spool, spool.lastReplaySeq, options.maxBackoffMs, {
        failed: (message) => this.hooks.writeFailed(this.sink.name, message),
        resume: () => this.schedule(),
        countKind: (kind) => this.counters.kind(kind).accepted++,
      });
    }
    this.startExport = AsyncResource.bind(() => void this.exportLoop());
    this.onTimer = AsyncResource.bind(() => {
      this.timer = undefined;
      if (this.busy || this.waiting === 0) return;
      this.busy = true;
      void this.exportLoop();
    });
  }

  /** While flushing or shut down, batches go out at once, without lingering. */
  private get draining(): boolean {
    return this.stopped || this.flushers > 0;
  }

  get pending(): number {
    return this.held + this.kept + (this.spool?.backlog ?? 0);
  }

  /** Entries waiting for the next batch (queued, or to retry after a write that went through). */
  private get waiting(): number {
    return this.queue.length + this.again.length;
  }

  override get drainable(): number {
    if (this.closedForGood) return 0; // what a spool kept waits for the next start
    return this.held + (this.backlogOwed ? this.spool!.backlog : 0);
  }

  /** Items held in memory (queued, in flight or waiting for a retry). */
  private get held(): number {
    return this.queue.length + this.flight.length + this.again.length;
  }

  /** Backlog on disk ready to be read back (not past shutdown's deadline: what is left then stays on disk for the next start). */
  private get backlogReady(): boolean {
    return this.backlog?.ready === true && !this.hardStop.signal.aborted;
  }

  /** Backlog on disk this process owes now: what `flush()` and the drain wait for. */
  private get backlogOwed(): boolean {
    return this.backlog?.owed === true;
  }

  /**
   * Starts delivering what the spool holds from a previous process (called once the sinks are
   * attached, at bootstrap). Without a spool, nothing to do.
   */
  start(): void {
    this.backlog?.start();
    this.schedule();
  }

  protected override oldestHeldCreatedAt(): number | undefined {
    let oldest = this.queue.length > 0 ? this.queue[0].item.createdAt : undefined;
    for (const list of [this.flight, this.again]) for (const entry of list) if (oldest === undefined || entry.item.createdAt < oldest) oldest = entry.item.createdAt;
    return oldest;
  }

  protected get queueDepth(): number {
    return this.waiting;
  }

  protected get inFlight(): number {
    return this.flight.length;
  }

  /** Accept an item, or drop (and count) it when the sink has no room for it. Returns whether it was queued. */
  enqueue(item: DeferredItem, payloadBytes?: number, since?: number): boolean {
    const entry = this.accept(item, payloadBytes, since);
    if (!entry) return false;
    if (this.spool) return this.enqueueSpooled(entry);
    if (!this.budget!.fits(entry.bytes, this.held)) {
      this.counters.drop(item.kind, 'queue-full');
      if (itemWatch.watching > 0) itemWatch.settled(item, 'dropped');
      return false;
    }
    this.budget!.hold(entry);
    this.queue.push(entry);
    this.schedule();
    return true;
  }

  /**
   * With a spool: the item is appended first (dropped, counted, when the spool refuses it), then held
   * in memory when there is room and nothing waits on disk before it; otherwise it waits on disk and
   * is read back in order as the queue empties.
   */
  private enqueueSpooled(entry: Entry): boolean {
    const spool = this.spool!;
    if (!spool.append(entry)) {
      this.counters.drop(entry.item.kind, 'spool-full');
      if (itemWatch.watching > 0) itemWatch.settled(entry.item, 'dropped');
      return false;
    }
    this.seq = entry.seq;
    if (spool.backlog === 0 && this.held < this.options.maxQueueSize && this.budget!.bytes + entry.bytes <= this.budget!.maxBytes) {
      spool.held(entry);
      this.budget!.hold(entry);
      this.queue.push(entry);
    } else {
      spool.backlog++;
      // On disk only, read back later as a new object: kept, from a watcher's point of view.
      if (itemWatch.watching > 0) itemWatch.settled(entry.item, 'kept');
    }
    this.schedule();
    return true;
  }

  /** Reads backlog records back from disk into the queue: a few batches at a time, within the byte budget (the disk is the buffer). */
  private refill(): void {
    if (!this.backlogReady || this.budget!.bytes >= this.budget!.maxBytes) return;
    const read = this.backlog!.read(Math.min(this.options.maxQueueSize - this.held, 4 * this.options.maxBatchSize));
    if (!read) return;
    for (const entry of read.entries) {
      this.budget!.hold(entry);
      this.queue.push(entry);
    }
    this.buryUnreadable(read.unreadable);
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
    while ((this.held > 0 || this.backlogOwed) && Date.now() < deadline) await this.flush(deadline);
    const before = this.counters.deadLettered;
    if (this.held > 0 || this.busy) {
      this.hardStop.abort(new Error('shutdown deadline reached'));
      // The export loop, cut short, dead-letters its in-flight entries and then the queue.
      while (this.busy) await this.waitForProgress(1000);
      this.buryAtDeadline([...this.again.splice(0), ...this.queue.splice(0)]);
    }
    this.closedForGood = true;
    this.clearTimer();
    return this.counters.deadLettered - before;
  }

  protected override oldestPendingSeq(): number {
    let oldest = this.queue.length > 0 ? this.queue[0].seq : Number.POSITIVE_INFINITY;
    for (const list of [this.flight, this.again]) for (const entry of list) if (entry.seq < oldest) oldest = entry.seq;
    // The backlog's records all come after what is in memory (seqs are the spool's, in order).
    if (this.backlogOwed) oldest = Math.min(oldest, this.spool!.backlogFrom);
    // Items sent to the back of the spool are read back out of seq order: wait for them all.
    if ((this.spool?.requeuedPending ?? 0) > 0) oldest = 0;
    return oldest;
  }

  private schedule(): void {
    if (this.busy || this.hardStop.signal.aborted) return;
    const behind = this.backlogReady;
    if (this.waiting === 0 && !behind) return;
    if (this.draining || behind || this.waiting >= this.options.maxBatchSize) {
      this.clearTimer();
      this.busy = true;
      setImmediate(this.startExport);
      return;
    }
    if (this.timer) return;
    // The linger counts from when the oldest queued item was created (ms resolution is enough).
    const waited = Date.now() - (this.queue.length > 0 ? this.queue[0].item.createdAt : this.againAt);
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
        this.refill();
        const batch = takeBatch(this.queue, this.again, this.options.maxBatchSize);
        if (batch.length === 0) break;
        try {
          await this.deliver(batch);
        } catch (error) {
          // A bug here, or in a sink's result: the batch must not vanish from the counts.
          const stranded = this.flight;
          this.flight = [];
          this.failInternally(stranded, error);
        }
      } while (this.waiting >= this.options.maxBatchSize || this.draining || this.backlogReady);
    } finally {
      this.busy = false;
      this.notifyProgress();
      this.schedule();
    }
  }
}
