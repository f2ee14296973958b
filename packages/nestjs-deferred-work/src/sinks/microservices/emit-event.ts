import type { DeferredJobOptions } from '../../core/items/deferred-item.interface';

/** What `emitEvent` needs of a deferred scope (`@Deferred() work: DeferredScope`, or the `DeferredWork` service). */
export interface JobDeferrer {
  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): void;
}

/** Options of one deferred event: `when`, and `jobId` — the message's stable id (default: the item's id, `dw-<uuid>`, given when it is accepted). */
export type DeferredEventOptions = Pick<DeferredJobOptions, 'when' | 'jobId'>;

/**
 * Defers `client.emit(pattern, data)` on the broker sink named `sink`, after the response has
 * finished: `work.job(sink, pattern, data, { sink, ...opts })`, so it goes to that sink whatever the
 * routing says. E.g. `emitEvent(work, 'orders', 'order.placed', { id })`.
 */
export function emitEvent(work: JobDeferrer, sink: string, pattern: string, data: unknown, opts?: DeferredEventOptions): void {
  work.job(sink, pattern, data, { ...opts, sink });
}
