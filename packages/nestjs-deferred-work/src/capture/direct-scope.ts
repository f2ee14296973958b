import type { DeferredItem, ItemCorrelation } from '../core/items/deferred-item.interface';
import type { Correlator } from './correlation';
import type { Dispatcher } from '../pipeline/dispatcher';
import { type RouteSettings, ScopeBase } from './scope-base';

/**
 * @internal
 * Used outside a decorated request (bootstrap, cron, queue consumers, undecorated routes): items go
 * straight to the dispatcher. There is no response to judge, so `when` does not filter here.
 */
export class DirectScope extends ScopeBase {
  constructor(
    route: RouteSettings,
    private readonly dispatcher: Dispatcher,
    correlator?: Correlator,
  ) {
    super(route, undefined, correlator);
  }

  /** No request here: the span active at the call, if any. */
  protected override correlation(): Readonly<ItemCorrelation> | undefined {
    return this.correlator?.active ? this.correlator.forCurrent()?.correlation : undefined;
  }

  protected override callback(fn: (signal: AbortSignal) => unknown): (signal: AbortSignal) => unknown {
    const context = this.correlator?.active ? this.correlator.forCurrent()?.otelContext : undefined;
    return context === undefined ? fn : this.correlator!.bind(fn, context);
  }

  protected add(item: DeferredItem): void {
    this.dispatcher.dispatch(item);
  }
}
