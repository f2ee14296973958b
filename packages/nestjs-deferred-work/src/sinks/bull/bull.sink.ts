import { SinkWriteError } from '../errors/sink-write.error';
import type { JobItem, SinkItem } from '../items/deferred-item.interface';
import { QueueHolder } from '../sinks/queue/queue-holder';
import type {
  DeferredSink,
  SinkAttachContext,
  SinkItemFailure,
  SinkProcessorOptions,
  SinkWriteContext,
  SinkWriteResult,
} from '../sinks/deferred-sink.interface';
import {
  BULL_SINK_DEFAULTS,
  BULL_SINK_NAME,
  type BullBulkJob,
  type BullQueueLike,
  type BullSinkOptions,
  type ModuleRefLike,
  bullQueueToken,
} from './bull-sink.options';

/** The jobs of one batch that go to one queue, with their indexes in the batch. */
interface QueueGroup {
  name: string;
  queue: BullQueueLike;
  indexes: number[];
  jobs: BullBulkJob[];
}

/** What the sink reads of a Bull queue beyond `BullQueueLike`, when present. */
interface QueueInternals {
  closing?: unknown;
  closed?: boolean;
  client?: { status?: string };
}

/**
 * Delivers `job` items to Bull 4 queues: one `queue.addBulk` (one MULTI, one round trip) per queue
 * per batch, reusing the queues the app registered with `BullModule.registerQueue` (looked up by
 * name through `moduleRef`) or the `Queue` instances it was given.
 *
 * Every job of a batch is checked: Bull 4's `addBulk` resolves even when Redis refused some of the
 * `addJob` commands inside the MULTI (it leaves their `id` unset), so those are reported as failed
 * and only they are retried. While Redis is not connected a write fails at once without sending, so
 * ioredis never queues a command offline that could be added twice after the dispatcher gave up on it.
 *
 * Delivery is at-least-once: a write cut by its timeout may still reach Redis; give jobs a `jobId`
 * to make retries idempotent. Only `kind: 'job'` items are accepted.
 */
export class BullSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly defaults: Partial<SinkProcessorOptions> = BULL_SINK_DEFAULTS;
  private readonly moduleRef: ModuleRefLike | undefined;
  private readonly given = new Map<string, BullQueueLike>();
  private readonly resolved = new Map<string, BullQueueLike>();
  private readonly queueToken: (name: string) => unknown;
  private readonly drainBeforeQueueClose: boolean;
  private readonly holder = new QueueHolder();

  constructor(options: BullSinkOptions) {
    if (!options || typeof options !== 'object') {
      throw new TypeError(
        'BullSink: options are required. Pass new BullSink({ moduleRef }) (inject ModuleRef in ' +
          'DeferredWorkModule.forRootAsync) or new BullSink({ queues: { name: queue } }).',
      );
    }
    this.name = options.name ?? BULL_SINK_NAME;
    if (typeof this.name !== 'string' || this.name === '') {
      throw new TypeError(`BullSink: name must be a non-empty string, got ${JSON.stringify(options.name)}.`);
    }
    const moduleRef = options.moduleRef;
    if (moduleRef !== undefined && (moduleRef === null || typeof moduleRef.get !== 'function')) {
      throw new TypeError(
        'BullSink: moduleRef must be Nest\'s ModuleRef (an object with get()). Inject it with ' +
          'DeferredWorkModule.forRootAsync({ inject: [ModuleRef], useFactory: (moduleRef) => ({ sinks: [new BullSink({ moduleRef })] }) }).',
      );
    }
    this.moduleRef = moduleRef;
    const queues = options.queues;
    if (Array.isArray(queues)) {
      queues.forEach((queue, i) => this.addGiven(queue?.name, queue, `queues[${i}]`));
    } else if (queues !== undefined) {
      if (queues === null || typeof queues !== 'object') {
        throw new TypeError('BullSink: queues must be an object { [queueName]: queue } or an array of queues.');
      }
      for (const [name, queue] of Object.entries(queues as Record<string, BullQueueLike>)) {
        this.addGiven(name, queue, `queues.${name}`);
      }
    }
    if (!this.moduleRef && this.given.size === 0) {
      throw new TypeError(
        'BullSink: no way to find queues. Pass moduleRef (to reuse the queues registered with ' +
          'BullModule.registerQueue) or queues ({ [queueName]: queue }).',
      );
    }
    if (options.queueToken !== undefined && typeof options.queueToken !== 'function') {
      throw new TypeError('BullSink: queueToken must be a function (name) => token, e.g. getQueueToken from @nestjs/bull.');
    }
    this.queueToken = options.queueToken ?? bullQueueToken;
    this.drainBeforeQueueClose = options.drainBeforeQueueClose ?? true;
  }

  /**
   * At bootstrap: with `drainBeforeQueueClose`, holds open every queue this sink may write to — the
   * queues it was given and, with `moduleRef`, every Bull queue registered in the app — so that a
   * queue nobody has written to yet is not closed before the drain either.
   */
  attach(context: SinkAttachContext): void {
    this.holder.attach(context.drain);
    if (!this.drainBeforeQueueClose) return;
    for (const queue of this.given.values()) this.holder.hold(queue);
    if (!this.moduleRef) return;
    for (const { token, instance } of context.providers()) {
      try {
        if (isQueue(instance) && typeof instance.name === 'string' && token === this.queueToken(instance.name)) this.holder.hold(instance);
      } catch {
        // A provider that throws on property access (a strict proxy outside its context) is no queue of ours.
      }
    }
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    if (signal.aborted) throw signal.reason;
    const failed: SinkItemFailure[] = [];
    const groups = new Map<string, QueueGroup>();
    for (let index = 0; index < batch.length; index++) {
      const item = batch[index];
      const refusal = refuse(item);
      if (refusal) {
        failed.push({ index, error: refusal, retryable: false });
        continue;
      }
      const job = item as JobItem;
      let group = groups.get(job.queue);
      if (!group) {
        let queue: BullQueueLike;
        try {
          queue = this.queue(job.queue);
        } catch (error) {
          failed.push({ index, error, retryable: false });
          continue;
        }
        group = { name: job.queue, queue, indexes: [], jobs: [] };
        groups.set(job.queue, group);
      }
      group.indexes.push(index);
      group.jobs.push(job.opts ? { name: job.name, data: job.data, opts: { ...job.opts } } : { name: job.name, data: job.data });
    }
    const outcomes = await Promise.all([...groups.values()].map((group) => this.addGroup(group, signal)));
    for (const outcome of outcomes) failed.push(...outcome);
    if (failed.length === 0) return undefined;
    failed.sort((a, b) => a.index - b.index);
    return { failed };
  }

  /** Forgets resolved queues. The sink never closes queues: they belong to the app (or to `@nestjs/bull`). */
  shutdown(): void {
    this.resolved.clear();
  }

  /** The queue for `name`: a given one, else one resolved (once) through `moduleRef`. */
  private queue(name: string): BullQueueLike {
    const queue = this.given.get(name) ?? this.resolved.get(name);
    if (queue) return queue;
    if (!this.moduleRef) {
      throw new SinkWriteError(
        `BullSink "${this.name}": no queue named "${name}" (known: ${[...this.given.keys()].map((n) => `"${n}"`).join(', ')}). ` +
          `Add it to new BullSink({ queues: { '${name}': queue } }), or pass moduleRef to use the queues registered with BullModule.registerQueue.`,
        { retryable: false },
      );
    }
    const token = this.queueToken(name);
    let found: unknown;
    try {
      found = this.moduleRef.get(token as string, { strict: false });
    } catch {
      found = undefined;
    }
    if (!isQueue(found)) {
      throw new SinkWriteError(
        `BullSink "${this.name}": Bull queue "${name}" is not registered (no provider ${String(token)} in the app). ` +
          `Register it with BullModule.registerQueue({ name: '${name}' }) in any module, or pass it in new BullSink({ queues }).`,
        { retryable: false },
      );
    }
    this.resolved.set(name, found);
    if (this.drainBeforeQueueClose) this.holder.hold(found); // first met now, even during shutdown
    return found;
  }

  /** One `addBulk` for one queue; returns the failures, or rejects when `signal` aborts. */
  private async addGroup(group: QueueGroup, signal: AbortSignal): Promise<SinkItemFailure[]> {
    const state = connectionState(group.queue);
    if (state !== 'up') return group.indexes.map((index) => ({ index, ...this.unavailable(group.name, state) }));
    let jobs: ReadonlyArray<{ id?: unknown } | null | undefined>;
    try {
      const adding = Promise.resolve().then(() => group.queue.addBulk(group.jobs));
      adding.catch(() => undefined); // once aborted, its late rejection must not become unhandled
      jobs = await raceAbort(adding, signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const after = connectionState(group.queue);
      const closed = after === 'closed';
      const message = closed
        ? this.unavailable(group.name, after).error
        : new SinkWriteError(`Bull queue "${group.name}": addBulk failed: ${errorMessage(error)}`, { cause: error });
      return group.indexes.map((index) => ({ index, error: message, retryable: !closed }));
    }
    const failed: SinkItemFailure[] = [];
    group.indexes.forEach((index, i) => {
      const job = jobs?.[i];
      if (job && job.id !== null && job.id !== undefined) return;
      failed.push({
        index,
        error: new SinkWriteError(
          `Bull queue "${group.name}": Redis refused to add job "${group.jobs[i].name}" (addBulk returned it without an id: ` +
            'its addJob command failed inside the MULTI; Bull 4 does not report why — look for errors in the Redis log, ' +
            'e.g. OOM or a key of the wrong type).',
        ),
      });
    });
    return failed;
  }

  private unavailable(name: string, state: 'down' | 'closed' | 'up'): { error: SinkWriteError; retryable: boolean } {
    if (state === 'closed') {
      return {
        retryable: false,
        error: new SinkWriteError(
          `Bull queue "${name}" is closed; its jobs cannot be added. If this happens at shutdown, the queue was closed before ` +
            'the deferred work drained: keep drainBeforeQueueClose on and pass moduleRef, or close your own queues after app.close().',
          { retryable: false },
        ),
      };
    }
    return {
      retryable: true,
      error: new SinkWriteError(
        `Bull queue "${name}": Redis is not connected; not sending (ioredis would queue the command offline). Will retry.`,
      ),
    };
  }

  private addGiven(name: unknown, queue: BullQueueLike, where: string): void {
    if (!isQueue(queue)) {
      throw new TypeError(`BullSink: ${where} is not a Bull queue (it needs an addBulk method). Pass a Queue from "bull".`);
    }
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`BullSink: ${where} has no name; pass queues as { [queueName]: queue } instead.`);
    }
    this.given.set(name, queue);
  }
}

/** Why an item cannot go to Bull at all (not retryable), or undefined. */
function refuse(item: SinkItem): SinkWriteError | undefined {
  if (item.kind !== 'job') {
    return new SinkWriteError(
      `BullSink takes jobs only, got a ${String((item as { kind?: unknown }).kind)} item. Route logs and metrics to another ` +
        "sink (DeferredWorkModule.forRoot({ routing: { job: 'bull', default: 'memory' } }) or the item's sink option).",
      { retryable: false },
    );
  }
  if (item.opts && item.opts.repeat !== undefined) {
    return new SinkWriteError(
      `Job "${item.name}" on queue "${item.queue}" has a "repeat" option, which Bull's addBulk ignores. ` +
        'Register repeatable jobs once at bootstrap with queue.add(name, data, { repeat }).',
      { retryable: false },
    );
  }
  return undefined;
}

function isQueue(value: unknown): value is BullQueueLike {
  return typeof value === 'object' && value !== null && typeof (value as BullQueueLike).addBulk === 'function';
}

/**
 * `up` when a command would be sent now, `closed` when the queue or its connection was closed for
 * good, `down` while ioredis is (re)connecting — sending then would only park the command in
 * ioredis' offline queue, to run whenever Redis comes back.
 */
function connectionState(queue: BullQueueLike): 'up' | 'down' | 'closed' {
  const q = queue as BullQueueLike & QueueInternals;
  if (q.closing || q.closed === true) return 'closed';
  let status: string | undefined;
  try {
    status = q.client?.status;
  } catch {
    return 'up';
  }
  if (status === undefined || status === 'ready' || status === 'wait') return 'up';
  if (status === 'end') return 'closed';
  return 'down';
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
