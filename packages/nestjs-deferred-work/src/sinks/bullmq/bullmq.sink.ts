import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { JobItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { isolate } from '../kit/isolate';
import { hasCorkableSocket } from '../kit/one-socket-write';
import { itemId } from '../kit/item-id';
import { redisReply } from '../kit/redis-errors';
import { redisState } from '../kit/redis-state';
import type { PackedJobData } from '../queue/packed-jobs';
import { addEach } from '../queue/add-each';
import { QueueSink } from '../queue/queue-sink';
import type { QueueState } from '../queue/queue-sink.options';
import { missingClientPackage, pendingClient } from './bullmq-clients';
import { bullMqOptionsProblem } from './bullmq-job-options';
import { addRefusal } from './bullmq-refusals';
import {
  BULLMQ_PROCESSOR_DEFAULTS,
  BULLMQ_SINK_NAME,
  type BullMqBulkJob,
  type BullMqJobResult,
  type BullMqQueueLike,
  type BullMqSinkOptions,
  bullMqQueueToken,
} from './bullmq-sink.options';
import type { OffloadedSink } from '../offload/offloaded.sink';
import { type BullMqOffloadOptions, offloadedBullMqSink } from './bullmq.offload';

/** How long the connection check waits for a client that is not connected yet. */
const CLIENT_WAIT_MS = 50;

/**
 * Most jobs of an add sent as separate `queue.add` calls instead of one `addBulk`. Every `addBulk`
 * builds an ioredis pipeline, which copies each of BullMQ's Lua scripts onto a new object — a fixed
 * cost of about a hundred µs of CPU, more than a job's own. A write that holds one or two jobs (each
 * request alone in its batch, at a light load) is cheaper as single adds; each job keeps its `jobId`.
 */
export const SINGLE_ADDS_UP_TO = 2;

/**
 * Delivers `job` items to BullMQ queues (`@nestjs/bullmq`): a batch's jobs for a queue in one socket
 * write — one `queue.add` each with the connected client's socket corked for the turn, or, with a
 * client that has no socket to cork (a Cluster's), one `queue.addBulk` per 32 jobs — reusing the
 * queues the app registered with `BullModule.registerQueue` (looked up through `moduleRef`) or the
 * `Queue` instances it was given.
 *
 * Some jobs of a batch may be in Redis when it fails part-way (BullMQ's `addBulk` is a pipeline, not a
 * MULTI). So every job carries a stable `jobId` — the one given, or the item's own id, the same on
 * every retry and replay — and a retried batch cannot add a job twice. Each job's outcome is its own;
 * when `addBulk` throws while Redis is up, the sink adds the jobs one by one to find which were
 * refused, and only those are retried. Nothing is sent while Redis is not connected (no ioredis offline-queue
 * duplicates). Job options are checked when the item is deferred, with BullMQ's own rules.
 */
export class BullMqSink extends QueueSink<BullMqQueueLike, BullMqBulkJob> {
  /**
   * A BullMQ sink whose work — building jobs and talking to Redis — runs in a worker thread, off the
   * request thread. The worker creates its own queues from plain options (`connection`, `queues`,
   * `prefix`, `defaultJobOptions`) and closes them after the drain. Job options are checked, and a
   * stable `jobId` given to jobs without one, on the request thread when the job is deferred, so a
   * retried batch cannot add a job twice. See docs/offload.md for when it pays.
   */
  static offloaded(options: BullMqOffloadOptions): OffloadedSink {
    return offloadedBullMqSink(options);
  }

  readonly defaults: Partial<SinkProcessorOptions> = BULLMQ_PROCESSOR_DEFAULTS;
  /** What each queue's client promise resolved to, read synchronously by later connection checks. */
  private readonly clients = new WeakMap<Promise<{ status?: string }>, { status?: string }>();

  constructor(options?: BullMqSinkOptions) {
    super(options, {
      sinkClass: 'BullMqSink',
      library: 'BullMQ',
      packageName: 'bullmq',
      nestPackage: '@nestjs/bullmq',
      addMethod: 'addBulk',
      defaultName: BULLMQ_SINK_NAME,
      defaultToken: bullMqQueueToken,
      otherLibrary: (value) =>
        typeof (value as { addBulk?: unknown } | null)?.addBulk === 'function'
          ? "is a Bull 4 queue (@nestjs/bull); use BullSink from 'nestjs-deferred-work/bull' for it."
          : undefined,
    });
  }

  /** BullMQ's own option rules, checked when the item is handed to the dispatcher. */
  validate(item: SinkItem): void {
    if (item.kind !== 'job') return;
    const problem = bullMqOptionsProblem(item.opts, item.data);
    if (problem) throw new Error(problem);
  }

  /**
   * At bootstrap: fails it when BullMQ could not make a queue's client because a package is not
   * installed (BullMQ 6 without `ioredis`), naming the package and the command that installs it. A
   * queue still connecting (Redis down at boot) passes at once.
   */
  protected override async checkClients(queues: readonly BullMqQueueLike[]): Promise<void> {
    const problem = await missingClientPackage(`BullMqSink "${this.name}"`, queues);
    if (problem) throw problem;
  }

  protected isQueue(value: unknown): value is BullMqQueueLike {
    const queue = value as BullMqQueueLike | null;
    return typeof value === 'object' && value !== null && typeof queue!.addBulk === 'function' && typeof queue!.waitUntilReady === 'function';
  }

  protected toJob(job: JobItem): BullMqBulkJob {
    const jobId = (job.opts?.jobId as string | undefined) ?? itemId(job);
    const opts = job.correlation ? { ...job.opts, jobId, correlation: job.correlation } : { ...job.opts, jobId };
    return { name: job.name, data: job.data, opts };
  }

  protected packedJob(name: string, data: PackedJobData, jobId: string): BullMqBulkJob {
    return { name, data, opts: { jobId } };
  }

  protected async addJobs(
    queue: BullMqQueueLike,
    jobs: BullMqBulkJob[],
    signal: AbortSignal,
    added?: (k: number) => void,
  ): Promise<ReadonlyArray<BullMqJobResult>> {
    if (jobs.length <= SINGLE_ADDS_UP_TO) return this.addSingly(queue, jobs, signal, added);
    // A connected ioredis client: single adds, without the pipeline addBulk builds (its instances
    // outlive young-generation collections, with every job in them: see inOneSocketWrite). Measured
    // without HTTP (batches of 30 jobs every 5 ms): 42–63 µs of CPU a job against 54–95 for addBulk,
    // 20–25 ms of GC a second against 71–95. Not corked: holding the socket corked until the next turn
    // (one socket write) cost the same CPU but left the benchmark's server waiting — bullmq-local,
    // Fastify, 10 connections: 10,349 req/s corked against 13,047 uncorked, busy 76% against 96%.
    const client = this.connectedClient(queue);
    if (client && hasCorkableSocket(client)) return this.addSingly(queue, jobs, signal, added);
    // One addBulk (a pipeline). When it fails part of it may be in Redis: with Redis up, each job is
    // added alone (their ids make the ones already added no-ops) to learn which were refused; with
    // Redis down, every job of the part fails as it is (retried later, nothing parked offline).
    // addBulk returns a job BullMQ refused with an error code for its id: kept to be read per job.
    const ids = new Map<BullMqBulkJob, unknown>();
    const addBulk = async (part: BullMqBulkJob[]) => {
      const added = await queue.addBulk(part);
      part.forEach((job, k) => ids.set(job, added?.[k]?.id));
    };
    const outcomes = await isolate(jobs, addBulk, {
      signal,
      split: 'singles',
      sendOne: (job) => queue.add(job.name, job.data, job.opts),
      splits: async () => (await this.connectionState(queue)) === 'up',
    });
    return outcomes.map((error, k) => (error === undefined ? { id: ids.has(jobs[k]) ? ids.get(jobs[k]) : true } : { error }));
  }

  /**
   * Each job as its own `queue.add`, all at once, each added job told to `added` as its add resolves.
   * A refusal is that job's alone; when an add failed and Redis is no longer up (or the signal
   * aborted), the jobs not added fail as a failed `addBulk`'s do (those added stay confirmed).
   */
  private async addSingly(queue: BullMqQueueLike, jobs: BullMqBulkJob[], signal: AbortSignal, added?: (k: number) => void): Promise<BullMqJobResult[]> {
    const outcomes = await addEach(jobs, (job) => this.addOne(queue, job, signal), (outcome) => !('error' in outcome), added);
    const failed = outcomes.find((outcome): outcome is { error: unknown } => 'error' in outcome);
    if (failed && (signal.aborted || (await this.connectionState(queue)) !== 'up')) throw failed.error;
    return outcomes;
  }

  /** One job as a single `queue.add`; its outcome as `addJobs` gives it (a refusal is this job's alone). */
  private async addOne(queue: BullMqQueueLike, job: BullMqBulkJob, signal: AbortSignal): Promise<{ id: true } | { error: unknown }> {
    if (signal.aborted) return { error: signal.reason };
    try {
      await queue.add(job.name, job.data, job.opts);
      return { id: true };
    } catch (error) {
      return { error };
    }
  }

  protected jobNotAdded(queueName: string, job: BullMqBulkJob, result: unknown): SinkWriteError | undefined {
    const outcome = result as BullMqJobResult;
    const thrown = outcome && 'error' in outcome ? outcome : undefined;
    const id = thrown ? undefined : (outcome as { id?: unknown } | null | undefined)?.id;
    const refusal = addRefusal(thrown ? thrown.error : id);
    if (refusal) {
      const answer = thrown ? ` (${errorMessage(thrown.error)})` : '';
      return new SinkWriteError(`BullMQ queue "${queueName}": BullMQ did not add job "${job.name}" (${job.opts.jobId}): ${refusal.reason}${answer}.`, {
        cause: thrown?.error,
        code: refusal.code,
        retryable: refusal.retryable,
      });
    }
    if (thrown) {
      // Redis's own reply says whether sending it again can help (WRONGTYPE, ERR: no; OOM, LOADING: yes).
      const { code, retryable } = redisReply(thrown.error);
      return new SinkWriteError(`BullMQ queue "${queueName}": Redis refused job "${job.name}" (${job.opts.jobId}): ${errorMessage(thrown.error)}`, {
        cause: thrown.error,
        code,
        retryable,
      });
    }
    if (id !== null && id !== undefined) return undefined;
    return new SinkWriteError(`BullMQ queue "${queueName}": job "${job.name}" (${job.opts.jobId}) came back without an id; it will be retried.`);
  }

  /** The queue's Redis client once it has resolved (read synchronously), else `undefined`. */
  private connectedClient(queue: BullMqQueueLike): { status?: string; stream?: unknown } | undefined {
    const pending = pendingClient(queue);
    return pending ? this.clients.get(pending) : undefined;
  }

  /**
   * `closed` once the queue's `close()` was called; otherwise what its ioredis client says. A client
   * still connecting (BullMQ resolves it only once connected) counts as `down`.
   */
  protected connectionState(queue: BullMqQueueLike): QueueState | Promise<QueueState> {
    if (queue.closing) return 'closed';
    const pending = pendingClient(queue);
    if (!pending) return 'up'; // nothing to read: let the add tell
    const known = this.clients.get(pending);
    if (known) return redisState(known); // no timer, no promise: a write's usual case
    return this.firstConnectionState(pending);
  }

  /** The connection check before the client resolved: waits for it a little, and keeps it. */
  private async firstConnectionState(pending: Promise<{ status?: string }>): Promise<QueueState> {
    let timer: NodeJS.Timeout | undefined;
    const client = await Promise.race([
      pending.catch(() => undefined),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), CLIENT_WAIT_MS))),
    ]);
    clearTimeout(timer);
    if (client === undefined) return 'down';
    this.clients.set(pending, client);
    return redisState(client);
  }
}
