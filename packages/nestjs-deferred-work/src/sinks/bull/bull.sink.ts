import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { JobItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { hasCorkableSocket } from '../kit/one-socket-write';
import { failureCode, NOT_CONNECTED } from '../kit/failure-codes';
import { redisReply } from '../kit/redis-errors';
import { redisState } from '../kit/redis-state';
import type { PackedJobData } from '../queue/packed-jobs';
import { addEach } from '../queue/add-each';
import { QueueSink } from '../queue/queue-sink';
import type { QueueState } from '../queue/queue-sink.options';
import { BULL_PROCESSOR_DEFAULTS, BULL_SINK_NAME, type BullBulkJob, type BullQueueLike, type BullSinkOptions, bullQueueToken } from './bull-sink.options';
import type { OffloadedSink } from '../offload/offloaded.sink';
import { type BullOffloadOptions, offloadedBullSink } from './bull.offload';
import { bullJobRefusal } from './bull-job-options';

/** A BullMQ queue has `waitUntilReady()`; a Bull 4 queue has `isReady()` instead. */
function isBullMqQueue(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { waitUntilReady?: unknown }).waitUntilReady === 'function';
}

/** What the sink reads of a Bull queue beyond `BullQueueLike`, when present. */
interface QueueInternals {
  closing?: unknown;
  closed?: boolean;
  client?: { status?: string; stream?: unknown };
  defaultJobOptions?: { repeat?: unknown };
}

type BullAdd = NonNullable<BullQueueLike['add']>;

/**
 * A job's outcome as `addJobs` gives it: the added job, what its add threw, or (single adds) what it
 * threw while the connection was `down` or the queue `closed`.
 */
type AddResult = { id?: unknown } | { error: unknown; connection?: 'down' | 'closed' } | null | undefined;

function thrown(outcome: AddResult): outcome is { error: unknown; connection?: 'down' | 'closed' } {
  return outcome !== null && outcome !== undefined && 'error' in outcome;
}

/** One job as a single `queue.add`: the added job, or what it threw. */
function addOne(add: BullAdd, job: BullBulkJob): Promise<AddResult> {
  return add(job.name, job.data, job.opts).catch((error: unknown) => ({ error }));
}

/** Whether an error is Redis's reply to the command (ioredis `ReplyError`), not the connection failing. */
function isReply(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

/**
 * Delivers `job` items to Bull 4 queues, reusing the queues the app registered with
 * `BullModule.registerQueue` (looked up by name through `moduleRef`) or the `Queue` instances it was
 * given: one `queue.add` per job, all of a write at once, through a connected client of its own;
 * one `queue.addBulk` (one MULTI, one round trip) per queue per batch otherwise.
 *
 * Every job is checked: a job Redis refused is reported alone, and only it is retried (Bull 4's
 * `addBulk` resolves even when Redis refused some of the `addJob` commands inside the MULTI, leaving
 * their `id` unset; the sink adds those again alone). While Redis is not connected a write fails at
 * once without sending, so ioredis never queues a command offline that could be added twice after
 * the dispatcher gave up on it.
 *
 * Delivery is at-least-once: a write cut by its timeout may still reach Redis; give jobs a `jobId`
 * to make retries idempotent. Only `kind: 'job'` items are accepted.
 */
export class BullSink extends QueueSink<BullQueueLike, BullBulkJob> {
  /**
   * A Bull sink whose work — building jobs and talking to Redis — runs in a worker thread, off the
   * request thread. The worker creates its own queues from plain options (`redis`, `queues`, `prefix`,
   * `defaultJobOptions`) on its own connection and closes them after the drain. Everything else is as
   * for `new BullSink()`: same name (`bull`), same dispatcher defaults, same checks per job (a job for a
   * queue not in `queues` is rejected when it is deferred). See docs/offload.md for when it pays.
   */
  static offloaded(options: BullOffloadOptions): OffloadedSink {
    return offloadedBullSink(options);
  }

  readonly defaults: Partial<SinkProcessorOptions> = BULL_PROCESSOR_DEFAULTS;

  constructor(options?: BullSinkOptions) {
    super(options, {
      sinkClass: 'BullSink',
      library: 'Bull',
      packageName: 'bull',
      nestPackage: '@nestjs/bull',
      addMethod: 'addBulk',
      defaultName: BULL_SINK_NAME,
      defaultToken: bullQueueToken,
      otherLibrary: (value) =>
        isBullMqQueue(value) ? "is a BullMQ queue (@nestjs/bullmq); use BullMqSink from 'nestjs-deferred-work/bullmq' for it." : undefined,
    });
  }

  protected isQueue(value: unknown): value is BullQueueLike {
    return typeof value === 'object' && value !== null && typeof (value as BullQueueLike).addBulk === 'function' && !isBullMqQueue(value);
  }

  protected toJob(job: JobItem): BullBulkJob {
    // A spooled job's stable id is its jobId when it has none: Redis then keeps one copy after a replay.
    const jobId = job.opts?.jobId ?? job.id;
    if (job.correlation || jobId !== undefined) {
      const opts: Record<string, unknown> = { ...job.opts };
      if (jobId !== undefined) opts.jobId = jobId;
      if (job.correlation) opts.correlation = job.correlation;
      return { name: job.name, data: job.data, opts };
    }
    return job.opts ? { name: job.name, data: job.data, opts: { ...job.opts } } : { name: job.name, data: job.data };
  }

  protected packedJob(name: string, data: PackedJobData, jobId: string): BullBulkJob {
    return { name, data, opts: { jobId } };
  }

  /**
   * With a connected client of its own (not a Cluster's): one `queue.add` per job, all at once — each
   * one `addJob` script call, outside a MULTI. Bull's `addBulk` is a MULTI, an ioredis pipeline, whose
   * instances outlive young-generation collections with every job in them (see `inOneSocketWrite` in the
   * sink kit): measured on the benchmark's `bull-local` route (Fastify, 10 connections, builds
   * alternating), single adds cut the server's GC from 79 to 25 ms a second and its CPU from 115 to 91 µs
   * a request, and served 10,376 req/s against 8,537. Each job's outcome is its own: a refused one is
   * reported alone and only it is retried.
   *
   * Otherwise one `addBulk` (one MULTI). The jobs it returns without an id are added again one by one:
   * Bull 4 hides why a command inside the MULTI failed, and the usual reason is `NOSCRIPT` after Redis
   * lost its script cache (a restart, a fail-over, `SCRIPT FLUSH`) — ioredis cannot reload a script
   * inside a MULTI, and keeps sending its hash there for up to a minute, while a single `add` runs the
   * script outside a MULTI, where ioredis reloads it. A command that failed inside the MULTI did not
   * run, so this adds nothing twice.
   */
  protected async addJobs(
    queue: BullQueueLike,
    jobs: BullBulkJob[],
    _signal?: AbortSignal,
    added?: (k: number) => void,
  ): Promise<ReadonlyArray<{ id?: unknown } | { error: unknown } | null | undefined>> {
    const add = queue.add?.bind(queue);
    const q = queue as BullQueueLike & QueueInternals;
    // A `repeat` among the queue's default job options: `add` would honour it, `addBulk` ignores it.
    if (add && q.defaultJobOptions?.repeat === undefined && hasCorkableSocket(q.client)) {
      const outcomes = await addEach(jobs, (job) => addOne(add, job), (outcome) => !thrown(outcome), added);
      if (!outcomes.some(thrown)) return outcomes;
      // An add that failed because the connection broke or the queue closed meanwhile was not refused
      // by Redis: those jobs fail as unsent ones do (closed: not retryable); the others keep their outcome.
      const state = await this.connectionState(queue);
      if (state === 'up') return outcomes;
      // Redis's own reply (WRONGTYPE, OOM) stays a refusal; only the others are put down to the connection.
      return outcomes.map((outcome) => (thrown(outcome) && !isReply(outcome.error) ? { error: outcome.error, connection: state } : outcome));
    }
    const results = await queue.addBulk(jobs);
    if (!add || results.every((result) => result?.id !== null && result?.id !== undefined)) return results;
    return Promise.all(results.map((result, i) => (result?.id !== null && result?.id !== undefined ? result : addOne(add, jobs[i]))));
  }

  protected jobNotAdded(queueName: string, job: BullBulkJob, result: unknown): SinkWriteError | undefined {
    const outcome = result as AddResult;
    if (thrown(outcome)) {
      const reason = outcome.error;
      if (outcome.connection === 'closed') return this.unavailable(queueName, 'closed').error;
      if (outcome.connection === 'down') {
        return new SinkWriteError(`Bull queue "${queueName}": the connection to Redis broke while adding job "${job.name}" (${errorMessage(reason)}). Will retry.`, {
          cause: reason,
          code: failureCode(reason) ?? NOT_CONNECTED,
        });
      }
      const { code, retryable } = redisReply(reason);
      return new SinkWriteError(`Bull queue "${queueName}": Redis refused job "${job.name}": ${errorMessage(reason)}`, { cause: reason, code, retryable });
    }
    const id = outcome?.id;
    if (id !== null && id !== undefined) return undefined;
    return new SinkWriteError(
      `Bull queue "${queueName}": Redis refused to add job "${job.name}" (addBulk returned it without an id: ` +
        'its addJob command failed inside the MULTI; Bull 4 does not report why — look for errors in the Redis log, ' +
        'e.g. OOM or a key of the wrong type).',
    );
  }

  /** Refuses, when it is deferred (counted in `stats().rejected`), what `refuse` would fail at write time: a job with `repeat`. */
  validate(item: SinkItem): void {
    const refusal = this.refuse(item);
    if (refusal) throw refusal;
  }

  /** Jobs only, and not with `repeat` (which Bull's `addBulk` ignores). */
  protected override refuse(item: SinkItem): SinkWriteError | undefined {
    const refusal = super.refuse(item);
    return refusal ?? bullJobRefusal(item);
  }

  /**
   * `up` when a command would be sent now, `closed` when the queue or its connection was closed for
   * good, `down` while ioredis is (re)connecting — sending then would only park the command in
   * ioredis' offline queue, to run whenever Redis comes back.
   */
  protected connectionState(queue: BullQueueLike): QueueState {
    const q = queue as BullQueueLike & QueueInternals;
    if (q.closing || q.closed === true) return 'closed';
    return redisState(q.client);
  }
}
