import { Inject, Injectable, Optional } from '@nestjs/common';
import { CollectingScope } from '../capture/collecting-scope';
import { Correlator } from '../capture/correlation';
import type { DeferredIntake, ItemBuilder, ItemOutcome } from '../core/intake.interface';
import type { SinkItem } from '../core/items/deferred-item.interface';
import { validateItem } from '../core/items/item-validator';
import { Dispatcher } from '../pipeline/dispatcher';
import { itemWatch } from '../pipeline/item-watch';

/**
 * @internal
 * The dispatcher as a source other than a request sees it (`DEFERRED_INTAKE`): items built outside
 * any request, validated up front, dispatched with their outcomes watched per sink.
 */
@Injectable()
export class DispatcherIntake implements DeferredIntake {
  constructor(
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Optional() @Inject(Correlator) private readonly correlator?: Correlator,
  ) {}

  get shutdownTimeoutMs(): number {
    return this.dispatcher.options.shutdownTimeoutMs;
  }

  builder(add: (item: SinkItem) => void): ItemBuilder {
    return new CollectingScope({ when: this.dispatcher.options.when, sinks: {} }, add, this.correlator);
  }

  validate(item: SinkItem): void {
    validateItem(item, this.dispatcher.options.maxItemBytes);
  }

  deliver(items: readonly SinkItem[], onSettled: (index: number, outcomes: readonly ItemOutcome[]) => void): void {
    const routing = this.dispatcher.options.routing;
    items.forEach((item, index) => {
      const target = item.sink ?? routing[item.kind];
      let owed = typeof target === 'string' ? 1 : Math.max(1, target.length);
      const outcomes: ItemOutcome[] = [];
      itemWatch.watch(item, (outcome) => {
        outcomes.push(outcome);
        // A refusal before routing (a bad item) comes once, not once per sink.
        if (outcome !== 'rejected' && --owed > 0) return;
        itemWatch.unwatch(item);
        onSettled(index, outcomes);
      });
    });
    for (const item of items) this.dispatcher.dispatch(item);
  }
}
