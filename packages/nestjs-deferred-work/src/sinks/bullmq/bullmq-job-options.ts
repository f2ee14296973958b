import type { JobsOptions } from 'bullmq';
import type { DeferredItemOptions, DeferredJobOptions } from '../../core/items/deferred-item.interface';

/**
 * BullMQ's own job options, typed, for `job()` — e.g.
 * `work.job('mail', 'send', data, bullMqJob({ jobId: 'order-42', priority: 1, removeOnComplete: 100 }))`.
 * Adds nothing at run time; `when` and `sink` may be given too.
 */
export function bullMqJob(opts: Omit<JobsOptions, 'repeat'> & DeferredItemOptions): DeferredJobOptions {
  return opts as DeferredJobOptions;
}

/** Largest priority BullMQ takes (2^21). */
const PRIORITY_LIMIT = 2_097_152;

/** Options BullMQ takes only one of: what a child's failure does to its parent. */
const EXCLUSIVE_ON_FAILURE = ['removeDependencyOnFailure', 'failParentOnFailure', 'continueParentOnFailure', 'ignoreDependencyOnFailure'] as const;

/**
 * Why BullMQ would refuse these job options (the checks of BullMQ's own `validateOptions`, and the
 * options `addBulk` cannot take), as a message that says how to fix it — or `undefined`. Run when the
 * item is handed to the dispatcher, so a bad option is rejected and counted there, not retried at
 * every write.
 */
export function bullMqOptionsProblem(opts: DeferredJobOptions | undefined, data?: unknown): string | undefined {
  if (!opts) return undefined;
  const { jobId, priority, repeat, debounce, deduplication, backoff, delay, attempts, parent, sizeLimit } = opts as Record<string, unknown>;
  if (jobId !== undefined) {
    if (typeof jobId !== 'string' || jobId === '') return `jobId must be a non-empty string (got ${JSON.stringify(jobId)})`;
    if (jobId.includes(':')) return `jobId "${jobId}" contains ":", which BullMQ refuses ("Custom Id cannot contain :"); use another separator, e.g. "order-42" or "order_42"`;
    if (`${parseInt(jobId, 10)}` === jobId) return `jobId "${jobId}" is an integer, which BullMQ refuses; prefix it, e.g. "order-${jobId}"`;
  }
  if (priority !== undefined && (!Number.isInteger(priority) || (priority as number) < 0 || (priority as number) > PRIORITY_LIMIT)) {
    return `priority must be a whole number between 0 and ${PRIORITY_LIMIT} (got ${String(priority)})`;
  }
  if (repeat !== undefined) return 'a "repeat" option cannot be added in a batch; register repeatable jobs once at bootstrap with queue.upsertJobScheduler()';
  if (debounce !== undefined) return 'BullMQ removed the "debounce" option; use "deduplication: { id }" instead';
  if (deduplication !== undefined && !(deduplication as { id?: unknown } | null)?.id) return 'deduplication needs an id: { deduplication: { id: "…" } }';
  const jitter = (backoff as { jitter?: unknown } | null | undefined)?.jitter;
  if (typeof jitter === 'number' && (jitter < 0 || jitter > 1)) return `backoff.jitter must be between 0 and 1 (got ${jitter})`;
  if (delay !== undefined && (typeof delay !== 'number' || !(delay >= 0))) return `delay must be a number of milliseconds >= 0 (got ${String(delay)})`;
  if (attempts !== undefined && (!Number.isInteger(attempts) || (attempts as number) < 1)) return `attempts must be a whole number >= 1 (got ${String(attempts)})`;
  const exclusive = EXCLUSIVE_ON_FAILURE.filter((option) => (opts as Record<string, unknown>)[option]);
  if (exclusive.length > 1) return `${exclusive.join(' and ')} cannot be used together (BullMQ refuses it); keep one`;
  if (deduplication !== undefined && parent !== undefined) return 'deduplication and parent cannot be used together (BullMQ refuses it); keep one';
  // as BullMQ measures it: the data as JSON (none: {}), against a sizeLimit that is set (not 0)
  if (typeof sizeLimit === 'number' && sizeLimit > 0 && Buffer.byteLength(JSON.stringify(data === undefined ? {} : data)) > sizeLimit) {
    return `the job's data is larger than its sizeLimit of ${sizeLimit} bytes (BullMQ refuses it); send less, or raise sizeLimit`;
  }
  if (parent !== undefined) {
    const { id, queue } = (parent ?? {}) as { id?: unknown; queue?: unknown };
    if (typeof id !== 'string' || id === '') return `parent.id must be the parent job's id, a non-empty string (got ${JSON.stringify(id)})`;
    if (typeof queue !== 'string' || !queue.includes(':')) {
      return `parent.queue must be the parent queue's qualified name, its prefix included, e.g. "bull:orders" for the queue "orders" (got ${JSON.stringify(queue)})`;
    }
  }
  return undefined;
}
