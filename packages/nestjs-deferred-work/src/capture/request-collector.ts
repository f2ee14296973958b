import type { DeferredItem } from '../core/items/deferred-item.interface';
import type { Dispatcher } from '../pipeline/dispatcher';
import type { Correlated, Correlator } from './correlation';
import type { RequestTracker } from './request-tracker';
import { HANDLER_METRIC, SEND_METRIC } from './route-timing';
import { type RouteSettings, ScopeBase } from './scope-base';

/** Timestamps of a measured request (`timing` on), in `performance.now()` ms. */
interface Timing {
  method: string;
  startedAt: number;
  handlerDoneAt?: number;
}

/** How a decorated request ended. `aborted`: the connection closed before the response finished. */
export type RequestOutcome = 'success' | 'failure' | 'aborted';

/**
 * @internal
 * Holds one request's items until its response has finished, then hands those whose `when`
 * matches the outcome to the dispatcher. Items added after that (a handler still running after
 * the client went away, or one that ended the response itself) are judged at once.
 */
export class RequestCollector extends ScopeBase {
  /** Items waiting for the outcome; created on the first item. */
  private items: DeferredItem[] | undefined;
  private outcome: RequestOutcome | undefined;
  private timing: Timing | undefined;

  constructor(
    route: RouteSettings,
    private readonly dispatcher: Dispatcher,
    private readonly tracker: RequestTracker,
    correlated?: Correlated,
    correlator?: Correlator,
  ) {
    super(route, correlated, correlator);
    tracker.opened();
  }

  /** The outcome, once the response finished or the connection closed. */
  get settledOutcome(): RequestOutcome | undefined {
    return this.outcome;
  }

  protected add(item: DeferredItem): void {
    if (this.outcome === undefined) (this.items ??= []).push(item);
    else this.release(item);
  }

  /** Whether the route asked for `timing`. */
  get measures(): boolean {
    return this.route.timing === true;
  }

  /** Starts measuring this request (the interceptor calls it when the route has `timing`). */
  startTiming(method: string): void {
    this.timing = { method, startedAt: performance.now() };
  }

  /** Marks the moment the handler returned (its observable emitted, completed or failed). */
  handlerDone(): void {
    if (this.timing && this.timing.handlerDoneAt === undefined) this.timing.handlerDoneAt = performance.now();
  }

  /** Called once, when the response finished (`finished` true) or the connection closed first. */
  settle(finished: boolean, statusCode: number): void {
    if (this.outcome) return;
    this.conclude(!finished ? 'aborted' : statusCode < 400 ? 'success' : 'failure', statusCode);
  }

  /**
   * Settles with an outcome decided by the caller: a microservice handler's (its reply sent, or it
   * finished), where there is no HTTP status to read. Once, like `settle`.
   */
  settleWith(outcome: RequestOutcome): void {
    if (this.outcome) return;
    this.conclude(outcome, 0);
  }

  /** Records the outcome and releases the items held so far. */
  protected conclude(outcome: RequestOutcome, statusCode: number): void {
    this.outcome = outcome;
    const finished = outcome !== 'aborted';
    this.tracker.ended(finished ? 'finished' : 'aborted');
    if (this.timing && finished) this.emitTiming(statusCode);
    const items = this.items;
    this.items = undefined;
    if (items) for (let i = 0; i < items.length; i++) this.release(items[i]);
  }

  private emitTiming(statusCode: number): void {
    const timing = this.timing!;
    const items = this.items === undefined ? 0 : this.items.length;
    const now = performance.now();
    const handlerDoneAt = timing.handlerDoneAt ?? now;
    const handlerMs = handlerDoneAt - timing.startedAt;
    const sendMs = now - handlerDoneAt;
    const route = this.route.path ?? '/';
    this.tracker.recordTiming(`${timing.method} ${route}`, handlerMs, sendMs, items);
    const tags = { route, method: timing.method, status: String(statusCode) };
    const createdAt = Date.now();
    const sink = this.route.sinks.metric;
    this.dispatcher.dispatch({ kind: 'metric', name: HANDLER_METRIC, value: handlerMs, tags, when: 'always', sink, createdAt });
    this.dispatcher.dispatch({ kind: 'metric', name: SEND_METRIC, value: sendMs, tags, when: 'always', sink, createdAt });
  }

  private release(item: DeferredItem): void {
    this.releaseAs(item, this.outcome!);
  }

  /** Dispatches `item` if its `when` matches `outcome`, else counts it as skipped. */
  protected releaseAs(item: DeferredItem, outcome: RequestOutcome): void {
    const when = item.when;
    const run = when === 'always' || (when === 'success' ? outcome === 'success' : outcome !== 'success');
    if (run) this.dispatcher.dispatch(item, this.route.handler);
    else this.dispatcher.skip(1);
  }
}
