import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { OffloadedSink } from '../offload/offloaded.sink';
import { checkQueueOffloadOptions, type QueueOffloadOptions, queueNameCheck } from '../queue/queue-offload';
import { bullMqOptionsProblem } from './bullmq-job-options';
import { BULLMQ_PROCESSOR_DEFAULTS, BULLMQ_SINK_NAME } from './bullmq-sink.options';

/** Options of `BullMqSink.offloaded()`: plain data the worker thread builds its BullMQ queues from. */
export interface BullMqOffloadOptions extends QueueOffloadOptions {
  /** BullMQ's `connection`: a `redis://` (or `rediss://`) URL or ioredis connection options (plain data). Required. */
  connection: string | Record<string, unknown>;
}

/**
 * The request-thread check of a BullMQ job: its queue and options (BullMQ's rules, as `BullMqSink`
 * checks them). The worker's copy of a job without a `jobId` uses the item's id, given at acceptance
 * and carried across the thread, so a retried batch cannot add a job twice.
 */
function bullMqJobCheck(queues: readonly string[]): (item: SinkItem) => void {
  const checkQueue = queueNameCheck('BullMqSink', queues);
  return (item) => {
    checkQueue(item);
    if (item.kind !== 'job') return;
    const problem = bullMqOptionsProblem(item.opts, item.data);
    if (problem) throw new Error(problem);
  };
}

/** See `BullMqSink.offloaded()`. */
export function offloadedBullMqSink(options: BullMqOffloadOptions, defaults: Partial<SinkProcessorOptions> = BULLMQ_PROCESSOR_DEFAULTS): OffloadedSink {
  checkQueueOffloadOptions('BullMqSink', 'connection', options);
  return new OffloadedSink(
    { name: options.name ?? BULLMQ_SINK_NAME, module: 'bullmq', options, kinds: ['job'], defaults, validate: bullMqJobCheck(options.queues) },
    'bullmq',
  );
}
