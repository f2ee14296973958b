import type { DeferredScope } from '../../capture/deferred-scope.interface';
import type { DeferredJobOptions } from '../../core/items/deferred-item.interface';
import { passthrough } from './passthrough';

/**
 * What a deferred queue's `add()` resolves with instead of a Bull or BullMQ `Job`: the job is added
 * after the response has finished, batched with other requests' jobs, so there is no `Job` yet. It
 * carries what a handler usually reads of one.
 */
export interface DeferredJobReceipt {
  /** The job's id in the queue: its `jobId` option, or the item's id (`dw-<uuid>`), which the sink uses as `jobId`. */
  id: string;
  /** The job's name. */
  name: string;
  data: unknown;
  /** The job options given (without `when` and `sink`). */
  opts: Record<string, unknown>;
  /** The queue it goes to. */
  queueName: string;
  /** Always `true`: added after the response, not yet. */
  deferred: true;
}

/** One job of `addBulk`, as Bull and BullMQ take it. */
interface BulkJob {
  name?: string;
  data: unknown;
  opts?: Record<string, unknown>;
}

/** Bull 4's name for jobs added without one. */
const DEFAULT_JOB_NAME = '__default__';

/**
 * A handle on the queue registered as `queueName` (`BullModule.registerQueue`, Bull or BullMQ):
 * `add(name, data, opts)` and `addBulk(jobs)` defer the job through the current scope (after the
 * response, batched, with the library's guarantees) and resolve at once with a receipt; every other
 * member is the real queue's (`getJobCounts()`, `on()`, …).
 */
export function deferredQueue<Q extends object = object>(queueName: string, scope: () => DeferredScope, real: () => object | undefined): Q {
  const defer = (name: string, data: unknown, opts: Record<string, unknown> | undefined): DeferredJobReceipt => {
    const id = scope().job(queueName, name, data, opts as DeferredJobOptions | undefined);
    const { when: _when, sink: _sink, ...rest } = opts ?? {};
    const jobId = rest.jobId;
    return { id: jobId === undefined || jobId === null ? id : String(jobId), name, data, opts: rest, queueName, deferred: true };
  };
  const own = {
    name: queueName,
    /** BullMQ: `add(name, data, opts?)`; Bull 4 also `add(data, opts?)`. */
    add(nameOrData: unknown, dataOrOpts?: unknown, opts?: unknown): Promise<DeferredJobReceipt> {
      if (typeof nameOrData === 'string') return Promise.resolve(defer(nameOrData, dataOrOpts, opts as Record<string, unknown> | undefined));
      return Promise.resolve(defer(DEFAULT_JOB_NAME, nameOrData, dataOrOpts as Record<string, unknown> | undefined));
    },
    addBulk(jobs: readonly BulkJob[]): Promise<DeferredJobReceipt[]> {
      return Promise.resolve(jobs.map((job) => defer(job.name ?? DEFAULT_JOB_NAME, job.data, job.opts)));
    },
  };
  return passthrough<Q>(
    own,
    real,
    () =>
      new Error(
        `Queue "${queueName}" is not registered, so only add() and addBulk() of its deferred handle work. ` +
          `Register it with BullModule.registerQueue({ name: '${queueName}' }) to use its other methods.`,
      ),
  );
}
