import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { OffloadedSink } from '../offload/offloaded.sink';
import { checkQueueOffloadOptions, type QueueOffloadOptions, queueNameCheck } from '../queue/queue-offload';
import { bullJobRefusal } from './bull-job-options';
import { BULL_PROCESSOR_DEFAULTS, BULL_SINK_NAME } from './bull-sink.options';

/** Options of `BullSink.offloaded()`: plain data the worker thread builds its Bull queues from. */
export interface BullOffloadOptions extends QueueOffloadOptions {
  /** Bull's `redis` option: a `redis://` URL or ioredis connection options (plain data). Required. */
  redis: string | Record<string, unknown>;
}

/** The request-thread check of a Bull job: its queue, and options Bull would not honour (`repeat`), as `BullSink` checks them. */
function bullJobCheck(queues: readonly string[]): (item: SinkItem) => void {
  const checkQueue = queueNameCheck('BullSink', queues);
  return (item) => {
    checkQueue(item);
    const refusal = bullJobRefusal(item);
    if (refusal) throw refusal;
  };
}

/** See `BullSink.offloaded()`. */
export function offloadedBullSink(options: BullOffloadOptions, defaults: Partial<SinkProcessorOptions> = BULL_PROCESSOR_DEFAULTS): OffloadedSink {
  checkQueueOffloadOptions('BullSink', 'redis', options);
  return new OffloadedSink(
    { name: options.name ?? BULL_SINK_NAME, module: 'bull', options, kinds: ['job'], defaults, validate: bullJobCheck(options.queues) },
    'bull',
  );
}
