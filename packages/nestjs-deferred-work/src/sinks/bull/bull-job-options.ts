import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem } from '../../core/items/deferred-item.interface';

/**
 * The refusal (not retryable) of a job whose options Bull would not honour when the sink adds it, or
 * `undefined`: `repeat`, which Bull's `addBulk` ignores. Checked when the item is deferred, by
 * `BullSink` and by the request-thread side of `BullSink.offloaded()`.
 */
export function bullJobRefusal(item: SinkItem): SinkWriteError | undefined {
  if (item.kind !== 'job' || !item.opts || item.opts.repeat === undefined) return undefined;
  return new SinkWriteError(
    `Job "${item.name}" on queue "${item.queue}" has a "repeat" option, which Bull's addBulk ignores. ` +
      'Register repeatable jobs once at bootstrap with queue.add(name, data, { repeat }).',
    { retryable: false },
  );
}
