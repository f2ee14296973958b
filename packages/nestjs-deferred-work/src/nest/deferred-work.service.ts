import { Inject, Injectable, Optional } from '@nestjs/common';
import { DeferredAsyncContext } from '../capture/async-context';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import { DirectScope } from '../capture/direct-scope';
import { scopeOfRequest } from '../capture/request-scopes';
import { RequestTracker } from '../capture/request-tracker';
import type { DeadLetter } from '../core/dead-letter.interface';
import type {
  DeadLetterFilter,
  DeadLetterPage,
  DeadLetterQuery,
  DeadLetterRecord,
  DeadLetterStore,
  RedriveOptions,
  RedriveResult,
  RedriveSelector,
} from '../core/dead-letter-store.interface';
import { DeadLetterStoreMissingError } from '../core/errors/dead-letter-store-missing.error';
import type { DeferredItemOptions, DeferredJobOptions, DeferredLogLevel, DeferredLogOptions, DeferredMetricOptions } from '../core/items/deferred-item.interface';
import type { DeferredStats } from '../core/stats.interface';
import { timeoutOr } from '../core/timers';
import { Dispatcher } from '../pipeline/dispatcher';
import type { ShutdownReport } from '../pipeline/shutdown-report';

/**
 * The injectable face of the library. Its `job`/`log`/`metric`/`run` go to the current request's
 * collector when `asyncContext` is on and a decorated request is running; otherwise straight to the
 * dispatcher.
 *
 * Inside an `@AfterResponse()` handler without `asyncContext`, these calls do NOT wait for the
 * response and ignore `when` (a `success` job still runs if the handler throws later): use
 * `@Deferred()` there, or `forRequest(req)`.
 *
 * Bootstrap checks and shutdown live in `DeferredWorkLifecycle`.
 */
@Injectable()
export class DeferredWork implements DeferredScope {
  constructor(
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Inject(DirectScope) private readonly direct: DirectScope,
    @Inject(RequestTracker) private readonly requests: RequestTracker,
    @Optional() @Inject(DeferredAsyncContext) private readonly asyncContext?: DeferredAsyncContext | null,
  ) {}

  /** The scope calls go to right now: the request's (async context mode) or the direct one. */
  current(): DeferredScope {
    return this.asyncContext?.current() ?? this.direct;
  }

  /** The scope of a request object (`@Req()`), or the direct scope if it has none. */
  forRequest(request: object): DeferredScope {
    return scopeOfRequest(request) ?? this.direct;
  }

  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): string {
    return this.current().job(queue, name, data, opts);
  }

  log(level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredLogOptions): string {
    return this.current().log(level, message, fields, opts);
  }

  metric(name: string, value: number, tags?: Record<string, string>, opts?: DeferredMetricOptions): string {
    return this.current().metric(name, value, tags, opts);
  }

  run(fn: (signal: AbortSignal) => unknown, opts?: Omit<DeferredItemOptions, 'sink'>): void {
    this.current().run(fn, opts);
  }

  /** Counters; `accepted = delivered + pending + dropped + deadLettered` holds at every moment. */
  stats(): DeferredStats {
    return { ...this.dispatcher.stats(), requests: this.requests.requests(), routes: this.requests.routes() };
  }

  /** Recent dead letters of this process (at most `deadLetterCapacity`), oldest first; the store (`listDeadLetters`) keeps more. */
  deadLetters(): readonly DeadLetter[] {
    return this.dispatcher.deadLetters();
  }

  /** Dead letters in the store (`deadLetter.store`), oldest first, paged: pass the page's `next` as `after`. */
  async listDeadLetters(query: DeadLetterQuery = {}): Promise<DeadLetterPage> {
    return this.deadLetterStore().list(query);
  }

  /** One dead letter by its id (`<item id>:<sink>`), or `undefined`. */
  async getDeadLetter(id: string): Promise<DeadLetterRecord | undefined> {
    return this.deadLetterStore().get(id);
  }

  /** How many dead letters the store holds that match the filter (all with `{}`). */
  async countDeadLetters(filter: DeadLetterFilter = {}): Promise<number> {
    return this.deadLetterStore().count(filter);
  }

  /**
   * Hands dead letters back to their sink — the same item, with the same id — at most `perSecond` a
   * second (default `deadLetter.redrivePerSecond`, 100), removing each from the store as it goes. Each
   * is accepted again by its sink (counted in `accepted` and in `redriven`) and settles like any item:
   * delivered, or dead-lettered again (a new record keeping its first error, `redrives` + 1). With
   * `dryRun`, only says what would be redriven. One redrive at a time: another call while one runs
   * throws `RedriveInProgressError`. Callbacks cannot be redriven.
   */
  async redriveDeadLetters(selector: RedriveSelector, options?: RedriveOptions): Promise<RedriveResult> {
    this.deadLetterStore();
    return this.dispatcher.deadLetterDesk.redrive!.run(selector, options);
  }

  /** Removes dead letters by id, without redriving them; returns how many were there. */
  async discardDeadLetters(ids: readonly string[]): Promise<number> {
    return this.deadLetterStore().remove(ids);
  }

  /** Removes every dead letter matching the filter (`{}`: all); returns how many. */
  async purgeDeadLetters(filter: DeadLetterFilter = {}): Promise<number> {
    return this.deadLetterStore().purge(filter);
  }

  private deadLetterStore(): DeadLetterStore {
    const store = this.dispatcher.deadLetterDesk.kept;
    if (!store) throw new DeadLetterStoreMissingError();
    return store;
  }

  /**
   * Send everything pending now; resolves `true` once all items accepted before the call are
   * delivered, dropped or dead-lettered, `false` if `timeoutMs` (default `shutdownTimeoutMs`) passes first.
   */
  flush(timeoutMs?: number): Promise<boolean> {
    return this.dispatcher.flush(timeoutMs);
  }

  /**
   * Resolves `true` once no decorated request is waiting for its response to end and everything
   * accepted by then has settled; `false` after `timeoutMs` (default `shutdownTimeoutMs`). For tests.
   */
  async settled(timeoutMs?: number): Promise<boolean> {
    const ms = timeoutOr(timeoutMs, this.dispatcher.options.shutdownTimeoutMs);
    const deadline = Date.now() + ms;
    if (!(await this.requests.whenNoneOpen(ms))) return false;
    return this.dispatcher.flush(Math.max(0, deadline - Date.now()));
  }

  /** Drain and stop; what shutdown runs (needs `app.enableShutdownHooks()` for signals). Idempotent. */
  shutdown(): Promise<ShutdownReport> {
    return this.dispatcher.shutdown();
  }
}
