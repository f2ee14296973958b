/**
 * Deferred jobs into BullMQ queues (`bullmq` and `@nestjs/bullmq` as optional peers).
 *
 * @module nestjs-deferred-work/bullmq
 */
export { BullMqSink } from './bullmq.sink';
export { bullMqJob } from './bullmq-job-options';
export {
  BULLMQ_PROCESSOR_DEFAULTS,
  BULLMQ_SINK_NAME,
  bullMqQueueToken,
  type BullMqBulkJob,
  type BullMqQueueLike,
  type BullMqSinkOptions,
} from './bullmq-sink.options';
export type { ModuleRefLike, PackJobsOptions, QueueSinkOptions } from '../queue/queue-sink.options';
export { isPackedJobData, unpackJob, type PackedJobData, type PackedJobItem, type UnpackableJob } from '../queue/packed-jobs';
export type { QueueOffloadOptions } from '../queue/queue-offload';
export type { BullMqOffloadOptions } from './bullmq.offload';
