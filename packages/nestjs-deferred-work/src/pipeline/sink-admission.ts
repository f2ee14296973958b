import { DeferredItemRejectedError } from '../core/errors/deferred-item-rejected.error';
import { errorMessage } from '../core/error-message';
import type { DeferredItem, SinkKind } from '../core/items/deferred-item.interface';
import { describeItem } from '../core/items/item-validator';
import { CallbackRunner } from './callbacks/callback-runner';
import type { ProcessorBase } from './processor/processor-base';
import { SinkProcessor } from './processor/sink-processor';

/**
 * Whether the sink named `name` (its processor, when there is one) takes `item`: it exists, takes
 * items of its kind, and its own check (`DeferredSink.validate`) passes. Throws the
 * `DeferredItemRejectedError` that says why not.
 */
export function checkSinkTakes(name: string, processor: ProcessorBase | undefined, item: DeferredItem & { kind: SinkKind }): asserts processor is ProcessorBase {
  if (!processor) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `no sink is named "${name}"`,
      'Use the name of a sink configured in DeferredWorkModule.forRoot({ sinks })',
    );
  }
  const kinds = processor.sink.kinds;
  if (kinds && !kinds.includes(item.kind)) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `sink "${name}" takes only ${kinds.join(', ')} items`,
      `Send ${item.kind} items to a sink that takes them (leave out the item's sink option to use the routing)`,
    );
  }
  if (!processor.sink.validate) return;
  try {
    processor.sink.validate(item);
  } catch (error) {
    throw new DeferredItemRejectedError(describeItem(item), `sink "${name}" refuses it: ${errorMessage(error)}`, 'Fix the item');
  }
}

/**
 * The warning for an accepted item that could not be queued: after shutdown (`closed`: it is
 * dead-lettered as such), or the queue is full (dropped). `undefined` when a sink's spool refused it
 * (the spool said so).
 */
export function refusalWarning(name: string, target: ProcessorBase | CallbackRunner): { closed: boolean; error?: boolean; key: string; message: string } | undefined {
  if (target instanceof SinkProcessor && target.spool && !target.closed) return undefined; // the spool refused it, and said so
  if (target.closed) {
    const because = target instanceof CallbackRunner ? undefined : target.closedBecause;
    return {
      closed: true,
      key: `closed:${name}`,
      message: because
        ? `An item for "${name}" was deferred after ${because}; it was dead-lettered (reason "closed"). Close the client after app.close(), or keep it open.`
        : `An item for "${name}" was deferred after the application shut down; it was dead-lettered (reason "closed"). ` +
          'Work deferred after app.close() does not run.',
    };
  }
  if (target instanceof CallbackRunner) {
    const limit = `${target.options.maxQueueSize} waiting with all ${target.options.concurrency} slots running; raise callbacks.maxQueueSize or callbacks.concurrency`;
    return { closed: false, key: `full:${name}`, message: `"${name}" queue is full (${limit}); dropping items. See stats().sinks for details.` };
  }
  return { closed: false, error: true, key: `full:${name}`, message: `Sink "${name}" ${budgetText(target)}; dropping new items (counted in stats().sinks["${name}"].dropped, reason "queue-full"). ` + 'The sink is slower than the load or unreachable: give it a spool (the spool option) to keep them on disk, or raise the limit.' };
}

/** What a sink's full budget holds, naming the limit that refused the item. */
function budgetText(target: ProcessorBase): string {
  const refusal = target instanceof SinkProcessor ? target.refusal : undefined;
  const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MiB`;
  switch (refusal?.limit) {
    case 'maxQueueBytes':
      return `holds ${mib(refusal.bytes)} of items, its byte budget (maxQueueBytes ${mib(target.options.maxQueueBytes)})`;
    case 'maxTotalQueueBytes':
      return `cannot hold more: the sinks together hold the module's maxTotalQueueBytes of items`;
    default:
      return `holds ${refusal?.held ?? target.pending} items, its maxQueueSize (${target.options.maxQueueSize})`;
  }
}
