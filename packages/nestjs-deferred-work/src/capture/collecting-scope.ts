import type { DeferredItem, SinkItem } from '../core/items/deferred-item.interface';
import type { Correlator } from './correlation';
import { DirectScope } from './direct-scope';
import type { RouteSettings } from './scope-base';

/**
 * @internal
 * A scope that builds items as the direct scope does (ids, the active span's correlation) and hands
 * them to `collect` instead of dispatching them: for sources that store items before they are
 * delivered (the SQL outbox). Callbacks cannot be stored, so `run()` throws.
 */
export class CollectingScope extends DirectScope {
  constructor(
    route: RouteSettings,
    private readonly collect: (item: SinkItem) => void,
    correlator?: Correlator,
  ) {
    super(route, undefined as never, correlator);
  }

  protected override add(item: DeferredItem): void {
    if (item.kind === 'callback') {
      throw new Error('run(fn) cannot be stored (a function is not data): write a job for a worker instead, or defer the callback with @Deferred() after the response.');
    }
    this.collect(item);
  }
}
