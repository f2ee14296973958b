import type { ItemCorrelation } from '../../core/items/deferred-item.interface';

/** The W3C `traceparent` of an item's correlation (`00-<trace>-<span>-<flags>`), or `undefined` when it has no trace. */
export function traceparent(correlation: Readonly<ItemCorrelation> | undefined): string | undefined {
  if (!correlation?.traceId || !correlation.spanId) return undefined;
  return `00-${correlation.traceId}-${correlation.spanId}-${(correlation.traceFlags ?? 0).toString(16).padStart(2, '0')}`;
}
