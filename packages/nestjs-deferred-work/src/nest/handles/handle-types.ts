import type { Observable } from 'rxjs';
import type { DeferredItemOptions, DeferredJobOptions } from '../../core/items/deferred-item.interface';
import type { DeferredEventOptions } from '../../sinks/microservices/emit-event';
import type { DeferredJobReceipt } from './deferred-queue.handle';

/**
 * The types of the deferred handles as the app declares them: the real queue's or client's type with
 * the deferred methods typed as they work — taking the library's options beside the library's own, and
 * returning what they return (a receipt, not a `Job`). Types only: nothing here exists at run time.
 */

/** `DeferredJobOptions` without its index signature: only the options it names (a misspelt one is an error). */
export type KnownDeferredJobOptions = { [K in keyof DeferredJobOptions as string extends K ? never : number extends K ? never : K]: DeferredJobOptions[K] };

/** A queue as the deferred handle sees one when no queue type is given: BullMQ's `add(name, data, opts)`. */
export interface AnyDeferrableQueue {
  add(name: string, data: unknown, opts?: KnownDeferredJobOptions): Promise<unknown>;
}

/** The job name type of a queue's `add(name, data, opts)` (BullMQ's `NameType`; `string` for Bull). */
export type QueueJobName<Q> = Q extends { add(name: infer N, data: never, opts?: never): unknown } ? (N extends string ? N : string) : string;
/** The job data type of a queue's `add(name, data, opts)` (BullMQ's `DataType`, Bull's `T`). */
export type QueueJobData<Q> = Q extends { add(name: never, data: infer D, opts?: never): unknown } ? D : unknown;
/** The job options type of a queue's `add(name, data, opts)` (BullMQ's `JobsOptions`, Bull's `JobOptions`). */
export type QueueJobOptions<Q> = Q extends { add(name: never, data: never, opts?: infer O): unknown } ? NonNullable<O> : KnownDeferredJobOptions;

/**
 * The options of a deferred job: the queue's own job options (BullMQ's `JobsOptions`, Bull's
 * `JobOptions`) and the library's `when` (default `'success'`) and `sink` (default: the routing's).
 */
export type DeferredQueueJobOptions<Q = AnyDeferrableQueue> = QueueJobOptions<Q> & DeferredItemOptions;

/** Whether a queue type has Bull 4's `add(data, opts?)` (a job without a name); BullMQ's has not. */
export type HasUnnamedAdd<Q> = Q extends { add(data: never): unknown } ? true : false;

/** One job of a deferred `addBulk(jobs)`: `name` may be left out where the queue allows it (Bull 4). */
export type DeferredBulkJob<Q = AnyDeferrableQueue> = { data: QueueJobData<Q>; opts?: DeferredQueueJobOptions<Q> } & (HasUnnamedAdd<Q> extends true
  ? { name?: QueueJobName<Q> }
  : { name: QueueJobName<Q> });

/** The methods a queue's deferred handle defers. */
export interface DeferredQueueMethods<Q = AnyDeferrableQueue> {
  /**
   * Adds the job after the response has finished (on an `@AfterResponse()` route; elsewhere with the
   * next batch), batched with other requests' jobs. Resolves at once with a receipt, not a `Job`.
   */
  add(name: QueueJobName<Q>, data: QueueJobData<Q>, opts?: DeferredQueueJobOptions<Q>): Promise<DeferredJobReceipt>;
  /** Adds the jobs, as `add()` does each. Resolves at once with a receipt per job. */
  addBulk(jobs: ReadonlyArray<DeferredBulkJob<Q>>): Promise<DeferredJobReceipt[]>;
}

/** Bull 4's `add(data, opts?)` (a job without a name), when the queue type has it; BullMQ's has not. */
export type DeferredBullDefaultAdd<Q> = HasUnnamedAdd<Q> extends true
  ? { add(data: QueueJobData<Q>, opts?: DeferredQueueJobOptions<Q>): Promise<DeferredJobReceipt> }
  : unknown;

/**
 * The type of a queue's deferred handle (`@InjectDeferredQueue('mail')`, `@Deferred.queue('mail')`):
 * `Q`'s members, with `add()` and `addBulk()` taking `Q`'s job options plus `when` and `sink`, and
 * resolving with a {@link DeferredJobReceipt}. `Q` is the queue's own type — BullMQ's or Bull's `Queue`;
 * default: a queue with BullMQ's `add(name, data, opts)` and the options `DeferredJobOptions` names.
 *
 * @example
 * ```ts
 * constructor(@InjectDeferredQueue('mail') private readonly mail: DeferredQueue<Queue>) {}
 * // …
 * await this.mail.add('confirm', { orderId }, { attempts: 3, when: 'always' });
 * ```
 */
export type DeferredQueue<Q extends object = AnyDeferrableQueue> = Omit<Q, 'add' | 'addBulk'> & DeferredQueueMethods<Q> & DeferredBullDefaultAdd<Q>;

/**
 * The type of a microservice client's deferred handle (`@InjectDeferredClient('EVENTS')`,
 * `@Deferred.client('EVENTS')`): `C`'s members (`send()`, `connect()`, … are the real client's), with
 * `emit(pattern, data, opts?)` deferred — `opts`: `when` (default `'success'`) and `jobId` (the
 * message's stable id; default: the item's id). `C` is the client's type, e.g. `ClientProxy`; default:
 * none (only `emit` is typed).
 *
 * @example
 * ```ts
 * constructor(@InjectDeferredClient('EVENTS') private readonly events: DeferredClient<ClientProxy>) {}
 * // …
 * this.events.emit('order.placed', { orderId }, { when: 'always' });
 * ```
 */
export type DeferredClient<C extends object = object> = Omit<C, 'emit'> & {
  /** Sends the event after the response; the observable emits `undefined` and completes at once. String patterns only. */
  emit<TInput = unknown>(pattern: string, data: TInput, opts?: DeferredEventOptions): Observable<undefined>;
};
