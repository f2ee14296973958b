import type { DeferredJobOptions, DeferredLogLevel, DeferredLogOptions, DeferredMetricOptions, SinkItem } from './items/deferred-item.interface';

/**
 * What became of an accepted item at one sink: `delivered`; `dead-lettered`; `kept` durably in the
 * sink's disk spool (delivered from there, after a restart if need be); `dropped` (the sink's queue
 * was full); `rejected` (refused before acceptance: no such sink, a kind the sink does not take).
 */
export type ItemOutcome = 'delivered' | 'dead-lettered' | 'kept' | 'dropped' | 'rejected';

/** The item calls of a scope: each builds an item (its id, the active span's correlation) and returns its id. */
export interface ItemBuilder {
  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): string;
  log(level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredLogOptions): string;
  metric(name: string, value: number, tags?: Record<string, string>, opts?: DeferredMetricOptions): string;
}

/**
 * @internal
 * How a source of items other than a request — the SQL outbox's relay — builds items and hands them
 * to the dispatcher, learning what became of each. Provided by `DeferredWorkModule` under
 * {@link DEFERRED_INTAKE}.
 */
export interface DeferredIntake {
  /** Builds items as a scope does and hands each to `add` (validated; callbacks refused) instead of dispatching it. */
  builder(add: (item: SinkItem) => void): ItemBuilder;
  /** Checks an item as the dispatcher will (shape, size); throws a `DeferredItemRejectedError` that says what to fix. */
  validate(item: SinkItem): void;
  /**
   * Dispatches the items; calls `onSettled` once per item, with its outcomes at every sink it is
   * routed to, when the last of them is known.
   */
  deliver(items: readonly SinkItem[], onSettled: (index: number, outcomes: readonly ItemOutcome[]) => void): void;
  /** The module's `shutdownTimeoutMs`. */
  readonly shutdownTimeoutMs: number;
}

/** @internal Injection token of the {@link DeferredIntake}. */
export const DEFERRED_INTAKE = Symbol.for('nestjs-deferred-work.intake');
