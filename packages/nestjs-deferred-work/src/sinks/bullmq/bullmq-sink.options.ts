import { QUEUE_PROCESSOR_DEFAULTS, type QueueSinkOptions } from '../queue/queue-sink.options';

export type { ModuleRefLike } from '../queue/queue-sink.options';

/** One job as BullMQ's `queue.addBulk` takes it. */
export interface BullMqBulkJob {
  name: string;
  data: unknown;
  opts: Record<string, unknown> & { jobId: string };
}

/** What a job's result looks like to the sink: the added job (with its id), or why it was not added. */
export type BullMqJobResult = { id?: unknown } | { error: unknown } | null | undefined;

/**
 * The part of a BullMQ `Queue` (5 or 6) the sink uses. Typed structurally so that this subpath needs
 * nothing from `bullmq` at runtime.
 */
export interface BullMqQueueLike {
  readonly name: string;
  addBulk(jobs: BullMqBulkJob[]): Promise<ReadonlyArray<{ id?: unknown } | null | undefined>>;
  add(name: string, data: unknown, opts?: object): Promise<{ id?: unknown } | null | undefined>;
  waitUntilReady(): Promise<unknown>;
  /** Set once `close()` was called. */
  closing?: Promise<void>;
}

/**
 * Options of {@link BullMqSink}, all optional (see `QueueSinkOptions`). `name` defaults to `'bullmq'`,
 * `queueToken` to `` `BullQueue_${name}` `` (what `getQueueToken(name)` of `@nestjs/bullmq` 10–12
 * returns), `drainBeforeQueueClose` to `true`.
 */
export type BullMqSinkOptions = QueueSinkOptions<BullMqQueueLike>;

/** The name of a BullMQ sink unless `name` says otherwise. */
export const BULLMQ_SINK_NAME = 'bullmq';

/**
 * Dispatcher settings of a BullMQ sink (see `QUEUE_PROCESSOR_DEFAULTS`). Retries cannot add a job
 * twice: every job has a stable `jobId`.
 */
export const BULLMQ_PROCESSOR_DEFAULTS = QUEUE_PROCESSOR_DEFAULTS;

/** `getQueueToken(name)` of `@nestjs/bullmq` (`@nestjs/bull-shared`) 10–12, without importing it. */
export function bullMqQueueToken(name: string): string {
  return name ? `BullQueue_${name}` : 'BullQueue_default';
}
