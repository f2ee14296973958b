import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { JobItem, SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkItemFailure, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { abortable } from '../kit/abortable';
import { chunk } from '../kit/chunks';
import { inTurns } from '../kit/in-turns';
import { redisNotConnected } from '../kit/redis-state';
import { type Part, Partitions } from '../kit/partitions';
import { runLimited } from '../kit/run-limited';
import { WriteProgress } from '../kit/write-progress';
import { type PackedJobData, packSize, type SendPlan, planPacking } from './packed-jobs';
import { QueueLookup } from './queue-lookup';
import type { NamedQueue, QueueFlavor, QueueSinkOptions, QueueState } from './queue-sink.options';

/** Queues one write adds to at once (each queue's jobs sent together: one round trip). */
const PARTS_AT_ONCE = 4;

/**
 * Most jobs in one batch add. Bull and BullMQ build and serialise every job of a batch add
 * synchronously (BullMQ: tens of µs per job), so a part of 512 jobs would hold the event loop — and
 * every request waiting on it — for 10 ms or more. A larger part is sent as several adds, each started
 * a turn of the event loop after the previous one (`setImmediate`), so requests are served in between.
 */
export const JOBS_PER_ADD = 32;

/**
 * Adds of one part in flight at once: the next one is built while the previous is on the wire. Each
 * add listens on the write's signal while it waits, so this (× {@link PARTS_AT_ONCE}) also bounds the
 * signal's listeners below Node's warning threshold (10).
 */
const ADDS_IN_FLIGHT = 2;

/** The jobs of `plan` at `positions` (`jobs`, already picked), with the batch indexes of their items. */
function pieceOf<J>(plan: SendPlan<J>, positions: readonly number[], jobs: J[]): SendPlan<J> {
  const covers = plan.covers;
  if (!covers) return { jobs, indexes: positions.map((k) => plan.indexes[k]) };
  const mine = positions.map((k) => covers[k]);
  return { jobs, indexes: mine.flat(), covers: mine };
}

/**
 * What every queue sink (Bull, BullMQ) guarantees, written once: jobs only; a batch's jobs sent together
 * per queue; queues found through the module ref or given, and held open until the drain ends;
 * nothing sent while the connection is not up (no ioredis offline-queue duplicates after the
 * dispatcher gave up on a write); every job's result checked, so that only refused jobs are retried;
 * a write cut short by its signal at once. A subclass says how to tell a queue, build a job, read the
 * connection state, add a batch and read a job's result.
 */
export abstract class QueueSink<Q extends NamedQueue, J> implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[] = Object.freeze(['job'] as const);
  private readonly lookup: QueueLookup<Q>;
  /** Holds a queue open until the drain ends (set at bootstrap). */
  private holdOpen: ((queue: Q) => void) | undefined;
  /** Deferred jobs per packed job (`packJobs`), `undefined` when jobs are not packed. */
  private readonly packItems: number | undefined;

  protected constructor(
    options: QueueSinkOptions<Q> | undefined,
    protected readonly flavor: QueueFlavor,
  ) {
    this.lookup = new QueueLookup(options, flavor, (value): value is Q => this.isQueue(value), (queue) => this.held(queue));
    this.name = this.lookup.sinkName;
    this.packItems = packSize(options?.packJobs, flavor.sinkClass);
  }

  /** Whether `value` is a queue of this sink's library. */
  protected abstract isQueue(value: unknown): value is Q;
  /** The job `addJobs` takes for an item. */
  protected abstract toJob(item: JobItem): J;
  /** Whether a job sent now would reach Redis. May be async. */
  protected abstract connectionState(queue: Q): QueueState | Promise<QueueState>;
  /**
   * Adds the jobs; resolves with one result per job, in order. Honours `signal` where it can. Where
   * jobs are added one by one (see `addEach`), calls `added(k)` as job `k`'s add resolves with the job
   * in Redis: it is then confirmed at once, and stays confirmed if the write is cut short before the
   * others are.
   */
  protected abstract addJobs(queue: Q, jobs: J[], signal: AbortSignal, added?: (k: number) => void): Promise<ReadonlyArray<unknown>>;
  /** The error for a job whose result says it was not added, or `undefined` when it was. */
  protected abstract jobNotAdded(queueName: string, job: J, result: unknown): SinkWriteError | undefined;
  /** The job that carries several deferred jobs of one name (`packJobs`), under `jobId`. */
  protected abstract packedJob(name: string, data: PackedJobData, jobId: string): J;

  /**
   * Why an item cannot go to this queue at all (not retryable), or `undefined`. Subclasses refuse
   * options their library ignores in a batch add, on top of this.
   */
  protected refuse(item: SinkItem): SinkWriteError | undefined {
    if (item.kind === 'job') return undefined;
    return new SinkWriteError(
      `${this.flavor.sinkClass} takes jobs only, got a ${String((item as { kind?: unknown }).kind)} item. Route logs and metrics to another ` +
        `sink (DeferredWorkModule.forRoot({ routing: { job: '${this.name}', default: 'memory' } }) or the item's sink option).`,
      { retryable: false },
    );
  }

  /**
   * At bootstrap: finds queues not given among the app's providers from now on and, with
   * `drainBeforeQueueClose`, holds open every queue this sink may write to — the queues it was given
   * and every queue registered in the app — so that a queue nobody has written to yet is not closed
   * before the drain either. Then checks those queues' clients (`checkClients`): a bootstrap that
   * fails there names what to install.
   */
  attach(context: SinkAttachContext): void | Promise<void> {
    this.lookup.attach(context);
    if (this.lookup.holdsOpen) this.holdOpen = (queue) => void context.holdOpen(queue);
    const queues: Q[] = [];
    for (const queue of this.lookup.reachable(context.providers())) {
      this.held(queue);
      queues.push(queue);
    }
    return this.checkClients(queues);
  }

  /**
   * At bootstrap, the queues found: rejects (or throws) a `SinkConfigError` when a queue's client can
   * never connect — a package its library loads is not installed. Must not wait for a server that is
   * down. Default: nothing to check.
   */
  protected checkClients(_queues: readonly Q[]): void | Promise<void> {
    return undefined;
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    if (signal.aborted) throw signal.reason;
    const parts = new Partitions<string, Q, J>();
    for (let index = 0; index < batch.length; index++) {
      const item = batch[index];
      const refusal = this.refuse(item);
      if (refusal) {
        parts.refuse(index, refusal);
        continue;
      }
      const job = item as JobItem;
      try {
        parts.add(job.queue, index, this.toJob(job), () => this.lookup.queue(job.queue));
      } catch (error) {
        parts.refuse(index, error); // an unknown queue
      }
    }
    // A few queues at a time (each part is one round trip); once the signal aborts, the parts that
    // were confirmed still count, and the rest are retried.
    const progress = new WriteProgress(batch.length);
    for (const failure of parts.failed) progress.failEntry(failure);
    const work = runLimited(parts.list(), PARTS_AT_ONCE, (part) => this.addInChunks(part, batch, signal, progress), signal);
    const complete = await progress.until(work, signal);
    return progress.result(complete, signal.reason);
  }

  /** Forgets resolved queues. The sink never closes queues: they belong to the app (or to the Nest integration). */
  shutdown(): void {
    this.lookup.forget();
  }

  private held(queue: Q): void {
    this.holdOpen?.(queue);
  }

  /**
   * A queue's part in adds of at most {@link JOBS_PER_ADD} jobs (with `packJobs`, packs and jobs),
   * each started a turn after the last, {@link ADDS_IN_FLIGHT} at a time; each add's jobs are confirmed
   * or failed on their own.
   */
  private async addInChunks(part: Part<Q, J>, batch: readonly SinkItem[], signal: AbortSignal, progress: WriteProgress): Promise<void> {
    const plan = this.plan(part, batch);
    const { chunks } = chunk(plan.jobs, { maxCount: JOBS_PER_ADD });
    const pieces = chunks.length === 1 ? [plan] : chunks.map((c) => pieceOf(plan, c.positions, c.values));
    await inTurns(
      pieces.length,
      ADDS_IN_FLIGHT,
      (c) =>
        this.addPiece(part.destination, pieces[c], signal, progress).then(
          (failures) => {
            for (const failure of failures) progress.failEntry(failure);
            progress.confirm(pieces[c].indexes);
          },
          (error: unknown) => progress.fail(pieces[c].indexes, error), // cut short by the signal
        ),
      (c, error) => progress.fail(pieces[c].indexes, error),
    );
  }

  /**
   * The jobs of `part` as they will be sent: one job per item, or, with `packJobs`, those without
   * options of their own packed by name.
   */
  private plan(part: Part<Q, J>, batch: readonly SinkItem[]): SendPlan<J> {
    if (this.packItems === undefined || part.values.length < 2) return { jobs: part.values, indexes: part.indexes };
    return planPacking(batch as readonly JobItem[], part.indexes, part.values, this.packItems, (name, data, jobId) => this.packedJob(name, data, jobId));
  }

  /**
   * One batch add of `piece`'s jobs to `queue`; returns the failures of their items, or rejects when
   * `signal` aborts (before the add is sent: then nothing is). Jobs added one by one are confirmed in
   * `progress` as each add resolves.
   */
  private async addPiece(queue: Q, piece: SendPlan<J>, signal: AbortSignal, progress: WriteProgress): Promise<SinkItemFailure[]> {
    if (signal.aborted) throw signal.reason;
    const all = (failure: { error: SinkWriteError; retryable: boolean }) => piece.indexes.map((index) => ({ index, ...failure }));
    const added = (k: number) => {
      if (piece.covers) for (const index of piece.covers[k]) progress.confirmOne(index);
      else progress.confirmOne(piece.indexes[k]);
    };
    const checked = this.connectionState(queue);
    const state = typeof checked === 'string' ? checked : await abortable(checked, signal);
    if (state !== 'up') return all(this.unavailable(queue.name, state));
    let results: ReadonlyArray<unknown>;
    try {
      // Not sent once the signal aborted (the state check above may have waited).
      const add = () => (signal.aborted ? Promise.reject(signal.reason) : this.addJobs(queue, piece.jobs, signal, added));
      results = await abortable(Promise.resolve().then(add), signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if ((await this.connectionState(queue)) === 'closed') return all(this.unavailable(queue.name, 'closed'));
      const message = `${this.flavor.library} queue "${queue.name}": adding the jobs failed: ${errorMessage(error)}`;
      return all({ error: new SinkWriteError(message, { cause: error }), retryable: true });
    }
    const failed: SinkItemFailure[] = [];
    for (let k = 0; k < piece.jobs.length; k++) {
      const error = this.jobNotAdded(queue.name, piece.jobs[k], results?.[k]);
      if (!error) continue;
      if (piece.covers) for (const index of piece.covers[k]) failed.push({ index, error });
      else failed.push({ index: piece.indexes[k], error });
    }
    return failed;
  }

  /** Why the jobs of queue `name` cannot be sent now (`down`: retryable) or at all (`closed`). */
  protected unavailable(name: string, state: 'down' | 'closed'): { error: SinkWriteError; retryable: boolean } {
    const library = this.flavor.library;
    if (state === 'closed') {
      const message =
        `${library} queue "${name}" is closed; its jobs cannot be added. If this happens at shutdown, the queue was closed before ` +
        'the deferred work drained: keep drainBeforeQueueClose on, or close your own queues after app.close().';
      return { retryable: false, error: new SinkWriteError(message, { retryable: false }) };
    }
    const message = `${library} queue "${name}": Redis is not connected; not sending (ioredis would queue the command offline). Will retry.`;
    return { retryable: true, error: redisNotConnected(message) };
  }
}
