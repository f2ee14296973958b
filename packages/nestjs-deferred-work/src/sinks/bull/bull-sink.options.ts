import { QUEUE_PROCESSOR_DEFAULTS, type QueueSinkOptions } from '../queue/queue-sink.options';

export type { ModuleRefLike } from '../queue/queue-sink.options';

/** One job as `queue.addBulk` takes it. */
export interface BullBulkJob {
  name?: string;
  data: unknown;
  opts?: object;
}

/**
 * The part of a Bull 4 `Queue` the sink uses (a `Queue` from `bull` fits). Typed structurally so
 * that this subpath needs nothing from `bull` at runtime.
 */
export interface BullQueueLike {
  readonly name: string;
  addBulk(jobs: BullBulkJob[]): Promise<ReadonlyArray<{ id?: unknown } | null | undefined>>;
  /** Adds one job (outside a MULTI): used for the jobs a batch add returned without an id. */
  add?(name: string | undefined, data: unknown, opts?: object): Promise<{ id?: unknown } | null | undefined>;
}

/**
 * Options of {@link BullSink}, all optional (see `QueueSinkOptions`). `name` defaults to `'bull'`,
 * `queueToken` to `` `BullQueue_${name}` `` (what `getQueueToken(name)` of `@nestjs/bull` 10, 11 and
 * 12 returns), `drainBeforeQueueClose` to `true`.
 */
export type BullSinkOptions = QueueSinkOptions<BullQueueLike>;

/** The name of a Bull sink unless `name` says otherwise. */
export const BULL_SINK_NAME = 'bull';

/** Dispatcher settings of a Bull sink (see `QUEUE_PROCESSOR_DEFAULTS`). */
export const BULL_PROCESSOR_DEFAULTS = QUEUE_PROCESSOR_DEFAULTS;

/** @deprecated The same as {@link BULL_PROCESSOR_DEFAULTS} (dispatcher settings, not the sink's own options). */
export const BULL_SINK_DEFAULTS = BULL_PROCESSOR_DEFAULTS;

/** `getQueueToken(name)` of `@nestjs/bull` / `@nestjs/bull-shared` 10–12, without importing them. */
export function bullQueueToken(name: string): string {
  return name ? `BullQueue_${name}` : 'BullQueue_default';
}
