import type { DeferredItem } from '../core/items/deferred-item.interface';
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
  ) {
    super(route);
  }

  protected add(item: DeferredItem): void {
    this.dispatcher.dispatch(item);
  }
}
