import { Logger } from '@nestjs/common';
import type { DeferredItem, SinkKind } from '../core/items/deferred-item.interface';
import { timeoutOr } from '../core/timers';
import type { ResolvedDeferredWorkOptions } from './resolved-options.interface';
import type { DeadLetter } from '../core/dead-letter.interface';
import { DeadLetterDesk } from './dead-letters/dead-letter-desk';
import { MemoryDeadLetterStore } from './dead-letters/memory-dead-letter.store';
import { validateItem } from '../core/items/item-validator';
import { DeferredItemRejectedError } from '../core/errors/deferred-item-rejected.error';
import { newItemId } from '../core/items/item-id';
import { RateLimitedLogger } from './warnings/rate-limited-logger';
import { itemWatch } from './item-watch';
import { itemBudgets } from './item-budgets';
import { InlineProcessor } from './processor/inline-processor';
import type { ProcessorBase } from './processor/processor-base';
import { SinkProcessor } from './processor/sink-processor';
import { SinkSpool } from './processor/sink-spool';
import { QueueBudget, TotalQueueBytes } from './processor/queue-budget';
import { TOTAL_QUEUE_BYTES_DEFAULT } from './defaults';
import { SinkWarnings } from './warnings/sink-warnings';
import { CALLBACK_RUNNER_NAME, CallbackRunner } from './callbacks/callback-runner';
import { closeSink, reportShutdown, type ShutdownReport } from './shutdown-report';
import { checkSinkTakes, refusalWarning } from './sink-admission';
import type { DispatcherStats, SinkStats } from '../core/stats.interface';
import type { KindCounts } from './processor/sink-counters';
import { type WriteObserver, WriteObservers } from './processor/write-observer';

/**
 * @internal
 * Takes accepted items, validates and routes them to one processor per sink (callbacks to the
 * callback runner), hands dead letters on (`DeadLetters`), and drains everything on shutdown.
 */
export class Dispatcher {
  private readonly processors = new Map<string, ProcessorBase>();
  private readonly runner: CallbackRunner;
  private readonly warnings: RateLimitedLogger;
  private readonly sinkWarnings: SinkWarnings;
  readonly deadLetterDesk: DeadLetterDesk;
  private rejected = 0;
  private closed = 0;
  private skipped = 0;
  private shutdownPromise: Promise<ShutdownReport> | undefined;
  private settling: Promise<void> | undefined;
  /** Each sink's shutdown, once started (by the application's shutdown, or by the app closing its client). */
  private readonly sinkShutdowns = new Map<string, Promise<number>>();
  /** Told of every write while set (the library's own metrics); none by default, so nothing is measured. */
  private readonly writeObservers = new WriteObservers();

  /**
   * @param inline Testing only (see `nestjs-deferred-work/testing`): every item is written at once, in
   *   the caller's turn, instead of being collected and batched.
   */
  constructor(
    readonly options: ResolvedDeferredWorkOptions,
    private readonly logger = new Logger('DeferredWork'),
    readonly inline = false,
  ) {
    this.warnings = new RateLimitedLogger(logger);
    this.sinkWarnings = new SinkWarnings(logger, this.warnings);
    const observers = this;
    const hooks = {
      get observer() {
        return observers.writeObservers.current;
      },
      deadLetter: (letters: DeadLetter[]) => this.deadLetterDesk.add(letters),
      writeFailed: (sinkName: string, message: string) => this.sinkWarnings.failed(sinkName, message),
      recovered: (sinkName: string) => this.sinkWarnings.recovered(sinkName),
    };
    const spoolHooks = { warn: (key: string, message: string) => this.warnings.warn(key, message), log: (message: string) => logger.log(message) };
    // What every sink holds in memory, together, within maxTotalQueueBytes.
    const total = new TotalQueueBytes(options.maxTotalQueueBytes ?? TOTAL_QUEUE_BYTES_DEFAULT);
    try {
      for (const [name, sink] of options.sinks) {
        const settings = options.processorOptions.get(name)!;
        const spoolSettings = options.spools?.get(name);
        // A spool opens here: its lock taken, what a previous process left counted (delivered from start()).
        const spool = spoolSettings && !inline ? new SinkSpool(name, spoolSettings, spoolHooks) : undefined;
        const budget = new QueueBudget(settings.maxQueueBytes, settings.maxQueueSize, total);
        this.processors.set(name, inline ? new InlineProcessor(sink, settings, hooks) : new SinkProcessor(sink, settings, hooks, spool, budget));
      }
    } catch (error) {
      void this.releaseSpools();
      throw error;
    }
    this.runner = new CallbackRunner(options.callbacks, hooks);
    try {
      this.deadLetterDesk = new DeadLetterDesk(options, this.warnings, this.processors);
    } catch (error) {
      void this.releaseSpools();
      throw error;
    }
  }

  /** Starts delivering what the sinks' spools hold from a previous process (at bootstrap, once the sinks are attached). */
  start(): void {
    for (const processor of this.processors.values()) if (processor instanceof SinkProcessor) processor.start();
  }

  /** Closes every spool (fsync, release the lock): after shutdown, or when the bootstrap failed. */
  async releaseSpools(): Promise<void> {
    await Promise.allSettled([...this.processors.values()].map((processor) => processor.spool?.close()));
    await this.deadLetterDesk?.close();
  }

  /** Validates, routes and enqueues one item. Never throws: a bad item is counted and logged, naming `origin` (`OrdersController.create()`) if given. */
  dispatch(item: DeferredItem, origin?: string): void {
    let bytes: number;
    try {
      bytes = validateItem(item, this.options.maxItemBytes);
    } catch (error) {
      return this.reject(item, error, origin);
    }
    // Its id, once: given when it was deferred (an item built elsewhere gets it here), the same across
    // retries, the worker thread, the spool and its dead letter — and every fanned-out copy.
    item.id ??= newItemId();
    itemBudgets.observe?.(item, this); // serverless mode: the invocation it belongs to, and its deadline
    if (item.kind === 'callback') {
      if (!this.runner.enqueue(item, this.inline)) this.refused(CALLBACK_RUNNER_NAME, this.runner);
      return;
    }
    const target = item.sink ?? this.options.routing[item.kind];
    if (typeof target === 'string') this.enqueueTo(target, item, bytes, origin);
    else for (const name of target) this.enqueueTo(name, item, bytes, origin); // a copy to each: each sink accounts for its own
  }

  /** Hands the item to the named sink's processor, after its checks; a refusal is counted and logged. */
  private enqueueTo(name: string, item: DeferredItem & { kind: SinkKind }, bytes: number, origin: string | undefined): void {
    try {
      const processor = this.processors.get(name);
      checkSinkTakes(name, processor, item);
      if (!processor.enqueue(item, bytes)) this.refused(name, processor);
    } catch (error) {
      this.reject(item, error, origin);
    }
  }

  /** Counts and logs an item refused before acceptance (naming where it was deferred, when known). */
  private reject(item: DeferredItem, error: unknown, origin?: string): void {
    this.rejected++;
    if (itemWatch.watching > 0) itemWatch.settled(item, 'rejected');
    const message = error instanceof DeferredItemRejectedError ? error.messageFrom(origin) : error instanceof Error ? error.message : String(error);
    // One key per kind: a message names the item, so keying on it would neither limit nor stay bounded.
    this.warnings.warn(`rejected:${item?.kind}`, message);
  }

  /** An accepted item that could not be queued: after shutdown (dead-lettered as `closed`), or the queue is full (dropped). */
  private refused(name: string, target: ProcessorBase | CallbackRunner): void {
    const warning = refusalWarning(name, target);
    if (!warning) return;
    if (warning.closed) this.closed++;
    if (warning.error) this.warnings.error(warning.key, warning.message);
    else this.warnings.warn(warning.key, warning.message);
  }

  /** Counts an item that did not run because the request's outcome did not match its `when`. */
  skip(count: number): void {
    this.skipped += count;
  }

  stats(): DispatcherStats {
    const sinks: Record<string, SinkStats> = {};
    const totals = { accepted: 0, delivered: 0, pending: 0, dropped: 0, deadLettered: 0, retried: 0 };
    for (const [name, processor] of [...this.processors, [CALLBACK_RUNNER_NAME, this.runner] as const]) {
      const s = processor.stats();
      sinks[name] = s;
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += s[key];
    }
    return {
      ...totals,
      rejected: this.rejected,
      skipped: this.skipped,
      closed: this.closed,
      callbacks: this.runner.runnerStats(),
      sinks,
    };
  }

  /** Each sink's counts by item kind (the callback runner's as `callbacks`, kind `callback`). */
  kindCounts(): Record<string, Record<string, KindCounts>> {
    const out: Record<string, Record<string, KindCounts>> = {};
    for (const [name, processor] of [...this.processors, [CALLBACK_RUNNER_NAME, this.runner] as const]) out[name] = processor.kindCounts();
    return out;
  }

  /** Tells `observer` of every write from now on (duration, size, failures) and of each item's delivery lag; returns how to stop. */
  observeWrites(observer: WriteObserver): () => void {
    return this.writeObservers.add(observer);
  }

  /** Items pending in the runner and every sink that a drain can deliver now. */
  private pending(): number {
    let pending = this.runner.pending;
    for (const processor of this.processors.values()) pending += processor.drainable;
    return pending;
  }

  /** Recent dead letters, oldest first (at most `deadLetterCapacity`). */
  deadLetters(): readonly DeadLetter[] {
    return this.deadLetterDesk.recent();
  }

  /**
   * Sends everything pending now and resolves once every item accepted before the call has been
   * delivered, dropped or dead-lettered — `true` — or after `timeoutMs` — `false`.
   */
  async flush(timeoutMs = this.options.shutdownTimeoutMs): Promise<boolean> {
    const ms = timeoutOr(timeoutMs, this.options.shutdownTimeoutMs);
    const deadline = Date.now() + ms;
    const results = await Promise.all([...this.processors.values(), this.runner].map((p) => p.flush(deadline)));
    return results.every(Boolean);
  }

  /**
   * Resolves once the items accepted before the call — and those that callbacks running then defer —
   * have been delivered, dropped or dead-lettered, or after `shutdownTimeoutMs`; the sinks keep
   * accepting, and items accepted later (under load, say) are not waited for. During shutdown, once
   * the shutdown has ended. Concurrent callers share one drain. What a held client waits for before
   * it closes (`SinkAttachContext.drain`).
   */
  drain(): Promise<unknown> {
    if (this.shutdownPromise) return this.shutdownPromise;
    this.settling ??= this.drainAccepted().finally(() => (this.settling = undefined));
    return this.settling;
  }

  /** Two flushes: what was accepted, then what the callbacks that ran meanwhile deferred. */
  private async drainAccepted(): Promise<void> {
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    const callbacks = this.runner.pending > 0;
    await this.flush(this.options.shutdownTimeoutMs);
    if (callbacks && Date.now() < deadline) await this.flush(deadline - Date.now());
  }

  /**
   * What a held client's close waits for (`SinkAttachContext.holdOpen`): the sinks that use it drain
   * within `shutdownTimeoutMs` and close, as at the application's shutdown — what they could not
   * deliver by then is kept by their spool, or dead-lettered and reported as undelivered by
   * `shutdown()`; items deferred to them later are dead-lettered as `closed`. The other sinks go on.
   * During the application's shutdown, waits for it instead.
   */
  closeSinks(names: readonly string[], because: string): Promise<unknown> {
    if (this.shutdownPromise) return this.shutdownPromise;
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    return Promise.all(
      names.map((name) => {
        const processor = this.processors.get(name);
        if (processor && !this.sinkShutdowns.has(name)) processor.closedBecause = because;
        return this.shutdownSink(name, deadline);
      }),
    );
  }

  /** The sink's processor's shutdown (drain until `deadline`, then give up), started once. */
  private shutdownSink(name: string, deadline: number): Promise<number> {
    let done = this.sinkShutdowns.get(name);
    if (done) return done;
    const processor = this.processors.get(name);
    done = processor ? processor.shutdown(deadline) : Promise.resolve(0);
    this.sinkShutdowns.set(name, done);
    return done;
  }

  /** Flushes until nothing a drain can deliver is pending, or `deadline` (epoch ms) passes. */
  private async settle(deadline: number): Promise<void> {
    while (this.pending() > 0 && Date.now() < deadline) await this.flush(Math.max(0, deadline - Date.now()));
  }

  /** Drains within `shutdownTimeoutMs` (or until `deadline`, epoch ms), then gives up on the rest and reports it. Idempotent: later calls get the first one's report. */
  shutdown(deadline?: number): Promise<ShutdownReport> {
    this.shutdownPromise ??= this.runShutdown(deadline ?? Date.now() + this.options.shutdownTimeoutMs);
    return this.shutdownPromise;
  }

  private async runShutdown(deadline: number): Promise<ShutdownReport> {
    const undelivered: Record<string, number> = {};
    const spooled: Record<string, number> = {};
    const inFlight: Record<string, number> = {};
    // First drain everything together, with every sink still accepting: a callback still running
    // may defer more (a log, a job), and that belongs to the drain, not to after it.
    await this.settle(deadline);
    const runnerLost = await this.runner.shutdown(deadline);
    if (runnerLost > 0) undelivered[CALLBACK_RUNNER_NAME] = runnerLost;
    await Promise.all(
      [...this.processors].map(async ([name, processor]) => {
        const lost = await this.shutdownSink(name, deadline);
        if (lost > 0) undelivered[name] = lost;
        inFlight[name] = processor.deadLetteredFor('shutdown-in-flight');
        const closed = await closeSink(name, processor, deadline, this.logger);
        if (closed.lostOnClose > 0) undelivered[name] = (undelivered[name] ?? 0) + closed.lostOnClose;
        if (closed.spooled > 0) spooled[name] = closed.spooled;
      }),
    );
    await this.deadLetterDesk.close();
    const store = this.deadLetterDesk.kept;
    const kept = store ? { description: store.description, durable: !(store instanceof MemoryDeadLetterStore) } : undefined;
    return reportShutdown(this.logger, this.options.shutdownTimeoutMs, undelivered, spooled, Boolean(this.options.spools?.size), kept, inFlight);
  }
}
