import type { DeferredItem } from '../items/deferred-item.interface';
import type { Dispatcher } from '../dispatch/dispatcher';
import { type RouteSettings, ScopeBase } from './scope-base';

/** How a decorated request ended. `aborted`: the connection closed before the response finished. */
export type RequestOutcome = 'success' | 'failure' | 'aborted';

/**
 * Holds one request's items until its response has finished, then hands those whose `when`
 * matches the outcome to the dispatcher. Items added after that (a handler still running after
 * the client went away, or one that ended the response itself) are judged at once.
 */
export class RequestCollector extends ScopeBase {
  private items: DeferredItem[] | undefined = [];
  private outcome: RequestOutcome | undefined;

  constructor(
    route: RouteSettings,
    private readonly dispatcher: Dispatcher,
  ) {
    super(route);
    dispatcher.requestOpened();
  }

  /** The outcome, once the response finished or the connection closed. */
  get settledOutcome(): RequestOutcome | undefined {
    return this.outcome;
  }

  protected add(item: DeferredItem): void {
    if (this.items) this.items.push(item);
    else this.release(item);
  }

  /** Called once, when the response finished (`finished` true) or the connection closed first. */
  settle(finished: boolean, statusCode: number): void {
    if (this.outcome) return;
    this.outcome = !finished ? 'aborted' : statusCode < 400 ? 'success' : 'failure';
    this.dispatcher.recordOutcome(finished ? 'finished' : 'aborted');
    const items = this.items!;
    this.items = undefined;
    for (let i = 0; i < items.length; i++) this.release(items[i]);
  }

  private release(item: DeferredItem): void {
    const when = item.when;
    const run = when === 'always' || (when === 'success' ? this.outcome === 'success' : this.outcome !== 'success');
    if (run) this.dispatcher.dispatch(item);
    else this.dispatcher.skip(1);
  }
}
