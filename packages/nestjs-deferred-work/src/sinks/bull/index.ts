/**
 * Deferred jobs into Bull queues (`bull` and `@nestjs/bull` as optional peers).
 *
 * @module nestjs-deferred-work/bull
 */
export { BullSink } from './bull.sink';
export {
  BULL_PROCESSOR_DEFAULTS,
  BULL_SINK_DEFAULTS,
  BULL_SINK_NAME,
  bullQueueToken,
  type BullBulkJob,
  type BullQueueLike,
  type BullSinkOptions,
} from './bull-sink.options';
export type { ModuleRefLike, PackJobsOptions, QueueSinkOptions } from '../queue/queue-sink.options';
export { isPackedJobData, unpackJob, type PackedJobData, type PackedJobItem, type UnpackableJob } from '../queue/packed-jobs';
export type { QueueOffloadOptions } from '../queue/queue-offload';
export type { BullOffloadOptions } from './bull.offload';
