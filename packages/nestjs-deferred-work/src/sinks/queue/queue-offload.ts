import type { SinkItem } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { checkPlainData } from '../offload/plain-data';
import { packSize } from './packed-jobs';
import type { PackJobsOptions } from './queue-sink.options';

/** What `BullSink.offloaded()` and `BullMqSink.offloaded()` share: the queues the worker creates. */
export interface QueueOffloadOptions {
  /** Sink name used by routing. Default: the sink's usual name (`bull`, `bullmq`). */
  name?: string;
  /**
   * The names of the queues jobs may go to; the worker creates one queue per name on its own Redis
   * connection. A job for another queue is rejected when it is deferred (`stats().rejected`). Required.
   */
  queues: readonly string[];
  /** Redis key prefix of the queues. Default: the library's (`bull`). */
  prefix?: string;
  /** Job options applied to every job of these queues, under the job's own. Default none. */
  defaultJobOptions?: Record<string, unknown>;
  /** The worker's sink packs jobs, as the in-process sink's `packJobs` option does. Default `false`. */
  packJobs?: boolean | PackJobsOptions;
}

/** Checks the options shared by the queue sinks' `offloaded()` (plain data, queue names). */
export function checkQueueOffloadOptions(sinkClass: string, connectionOption: string, options: QueueOffloadOptions): void {
  const prefix = `${sinkClass}.offloaded()`;
  if (options === null || typeof options !== 'object') {
    throw new SinkConfigError(`${prefix}: pass options, e.g. { ${connectionOption}: 'redis://127.0.0.1:6379', queues: ['mail'] }.`);
  }
  const queues = options.queues as unknown;
  if (!Array.isArray(queues) || queues.length === 0 || queues.some((name) => typeof name !== 'string' || name === '')) {
    throw new SinkConfigError(
      `${prefix}: option "queues" must list the names of the queues jobs go to, e.g. queues: ['mail'] (got ${JSON.stringify(queues)}). ` +
        'The worker thread creates these queues itself.',
      'queues',
    );
  }
  const connection = (options as unknown as Record<string, unknown>)[connectionOption];
  if (typeof connection !== 'string' && (connection === null || typeof connection !== 'object')) {
    throw new SinkConfigError(
      `${prefix}: option "${connectionOption}" is required: a redis:// URL or connection options such as { host: '127.0.0.1', port: 6379 }. ` +
        'A live client or queue cannot be passed to a worker thread.',
      connectionOption,
    );
  }
  packSize(options.packJobs, prefix);
  checkPlainData(prefix, 'options', options);
}

/** The request-thread check of an offloaded queue sink's job: its queue is one the worker has. */
export function queueNameCheck(sinkClass: string, queues: readonly string[]): (item: SinkItem) => void {
  const known = new Set(queues);
  return (item) => {
    if (item.kind !== 'job' || known.has(item.queue)) return;
    throw new Error(
      `queue "${item.queue}" is not one of the queues given to ${sinkClass}.offloaded() (${queues.join(', ')}). Add it to "queues".`,
    );
  };
}
