import { createHash } from 'node:crypto';
import type { ItemCorrelation, JobItem } from '../../core/items/deferred-item.interface';
import { itemId } from '../kit/item-id';

/** One deferred job inside a packed job. */
export interface PackedJobItem<T = unknown> {
  /** The item's id (`dw-<uuid>`): the same on every retry and spool replay; dedupe by it. */
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

/** The jobs one add sends for a piece of a write, and which of the piece's positions each covers. */
export interface SendPlan<J> {
  jobs: J[];
  covers: number[][];
}

/**
 * Packs a piece of a write: items without job options of their own are grouped by job name, each
 * group of two or more into one packed job (`pack(name, data, jobId)`); the others go as their own
 * job (`jobs[p]`). Order: unpacked jobs first, then the packs, by the first position of each name.
 */
export function planPacking<J>(items: readonly JobItem[], jobs: readonly J[], pack: (name: string, data: PackedJobData, jobId: string) => J): SendPlan<J> {
  const plan: SendPlan<J> = { jobs: [], covers: [] };
  const groups = new Map<string, number[]>();
  for (let p = 0; p < items.length; p++) {
    const item = items[p];
    if (!isPackable(item)) {
      plan.jobs.push(jobs[p]);
      plan.covers.push([p]);
      continue;
    }
    const group = groups.get(item.name);
    if (group) group.push(p);
    else groups.set(item.name, [p]);
  }
  for (const [name, positions] of groups) {
    if (positions.length === 1) {
      plan.jobs.push(jobs[positions[0]]);
      plan.covers.push(positions);
      continue;
    }
    const packed: PackedJobItem[] = [];
    const ids: string[] = [];
    for (const p of positions) {
      const item = items[p];
      const id = itemId(item);
      ids.push(id);
      packed.push(item.correlation ? { id, data: item.data, correlation: item.correlation } : { id, data: item.data });
    }
    plan.jobs.push(pack(name, { deferredWorkPacked: 1, items: packed }, packedJobId(ids)));
    plan.covers.push(positions);
  }
  return plan;
}
