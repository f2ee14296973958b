import { createHash } from 'node:crypto';
import type { ItemCorrelation, JobItem } from '../../core/items/deferred-item.interface';
import { itemId } from '../kit/item-id';
import { SinkConfigError } from '../kit/sink-config.error';
import type { PackJobsOptions } from './queue-sink.options';

/** One deferred job inside a packed job. */
export interface PackedJobItem<T = unknown> {
  /**
   * The item's id (`dw-<uuid>`, the same on every retry, spool replay and redrive: dedupe by it); for a
   * job that was not packed, what `unpackJob` gives is the job's id (its own `jobId`, or the item's id).
   */
  id: string;
  /** The job's data, as deferred. */
  data: T;
  /** The request's ids, when correlation is on. */
  correlation?: ItemCorrelation;
}

/** `job.data` of a packed job (see the queue sinks' `packJobs` option). */
export interface PackedJobData<T = unknown> {
  /** Marks a packed job; always `1`. */
  deferredWorkPacked: 1;
  /** The deferred jobs it holds, in the order they were deferred. */
  items: PackedJobItem<T>[];
}

/** A job as a Bull or BullMQ worker receives it (only what {@link unpackJob} reads). */
export interface UnpackableJob {
  id?: string | number | null;
  data: unknown;
  opts?: { correlation?: ItemCorrelation } | object;
}

/** Most deferred jobs in one packed job with `packJobs: true`. */
const PACK_MAX_ITEMS = 100;

/** `packJobs` as a number of items per pack, or `undefined` when off; throws on a bad value. */
export function packSize(option: boolean | PackJobsOptions | undefined, sinkClass: string): number | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return PACK_MAX_ITEMS;
  const maxItems = typeof option === 'object' && option !== null ? (option.maxItems ?? PACK_MAX_ITEMS) : NaN;
  if (!Number.isInteger(maxItems) || maxItems < 2 || maxItems > 10_000) {
    throw new SinkConfigError(
      `${sinkClass}: packJobs must be true, false or { maxItems } with maxItems a whole number from 2 to 10000, got ${JSON.stringify(option)}.`,
      'packJobs',
    );
  }
  return maxItems;
}

/** Whether `data` is a packed job's data. */
export function isPackedJobData(data: unknown): data is PackedJobData {
  return typeof data === 'object' && data !== null && (data as { deferredWorkPacked?: unknown }).deferredWorkPacked === 1 && Array.isArray((data as { items?: unknown }).items);
}

/**
 * The deferred jobs a job holds, for a worker of a queue written with `packJobs`: a packed job's items,
 * or a one-item list for a job that was not packed (a job deferred alone in its write, or one with job
 * options of its own) — so one handler serves both.
 *
 * ```ts
 * @Processor('telemetry')
 * export class TelemetryConsumer extends WorkerHost {
 *   async process(job: Job) {
 *     for (const { id, data } of unpackJob<Event>(job)) await this.store.upsert(id, data);
 *   }
 * }
 * ```
 */
export function unpackJob<T = unknown>(job: UnpackableJob): PackedJobItem<T>[] {
  if (isPackedJobData(job.data)) return job.data.items as PackedJobItem<T>[];
  const item: PackedJobItem<T> = { id: String(job.id ?? ''), data: job.data as T };
  const correlation = (job.opts as { correlation?: ItemCorrelation } | undefined)?.correlation;
  if (correlation) item.correlation = correlation;
  return [item];
}

/** Whether a job item may share a packed job: it has no job options of its own. */
export function isPackable(item: JobItem): boolean {
  const opts = item.opts;
  if (!opts) return true;
  for (const key in opts) if ((opts as Record<string, unknown>)[key] !== undefined) return false;
  return true;
}

/**
 * A packed job's id, from the ids of the items it holds: a retry of the same items gets the same id
 * (Redis keeps one copy), a different set of items another one.
 */
export function packedJobId(ids: readonly string[]): string {
  return `dw-pack-${createHash('sha1').update(ids.join(',')).digest('hex')}`;
}

/**
 * Jobs as they will be sent, with the batch indexes of the items they carry: `indexes` all of them;
 * `covers[k]` those of `jobs[k]` when jobs were packed (without `covers`, job `k` carries item `indexes[k]`).
 */
export interface SendPlan<J> {
  jobs: J[];
  indexes: number[];
  covers?: number[][];
}

/**
 * Packs a queue's share of a write — the items of `batch` at `indexes`, whose own jobs are `jobs` —:
 * items without job options of their own are grouped by job name and each group cut into packs of
 * at most `maxItems` (`pack(name, data, jobId)`), in the order they were deferred; the others — and an
 * item left alone in its group or as a group's last — go as their own job. Jobs and packs come out in
 * the order of their first item. Every pack but a group's last is full, so a retry of whole packs
 * rebuilds the same packs (and their ids).
 */
export function planPacking<J>(
  batch: readonly JobItem[],
  indexes: readonly number[],
  jobs: readonly J[],
  maxItems: number,
  pack: (name: string, data: PackedJobData, jobId: string) => J,
): SendPlan<J> {
  const groups = new Map<string, number[]>();
  const planned: Array<{ first: number; job: J; cover: number[] }> = [];
  for (let p = 0; p < indexes.length; p++) {
    const item = batch[indexes[p]];
    if (!isPackable(item)) {
      planned.push({ first: p, job: jobs[p], cover: [indexes[p]] });
      continue;
    }
    const group = groups.get(item.name);
    if (group) group.push(p);
    else groups.set(item.name, [p]);
  }
  for (const [name, positions] of groups) {
    for (let from = 0; from < positions.length; from += maxItems) {
      const chosen = positions.slice(from, from + maxItems);
      const cover = chosen.map((p) => indexes[p]);
      if (chosen.length === 1) {
        planned.push({ first: chosen[0], job: jobs[chosen[0]], cover });
        continue;
      }
      const packed: PackedJobItem[] = [];
      const ids: string[] = [];
      for (const index of cover) {
        const item = batch[index];
        const id = itemId(item);
        ids.push(id);
        packed.push(item.correlation ? { id, data: item.data, correlation: item.correlation } : { id, data: item.data });
      }
      planned.push({ first: chosen[0], job: pack(name, { deferredWorkPacked: 1, items: packed }, packedJobId(ids)), cover });
    }
  }
  planned.sort((a, b) => a.first - b.first);
  const covers = planned.map((entry) => entry.cover);
  return { jobs: planned.map((entry) => entry.job), indexes: covers.flat(), covers };
}
