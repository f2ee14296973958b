import { Worker } from 'node:worker_threads';
import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkHostStats, SinkItemFailure } from '../../core/sink.interface';
import { failureCode } from '../kit/failure-codes';
import type { FromHost, HostItemFailure, SinkHostData, ToHost } from './host-protocol';
import { sinkHostScript } from './worker-script';

/** How long an aborted write may go unanswered before it is given up (the dispatcher gives it 1 s). */
const ABANDON_AFTER_MS = 1500;
/** Aborted writes given up in a row after which the worker is replaced (its sink is stuck). */
const RECYCLE_AFTER_ABANDONED = 3;

/** What a write in the worker came to. */
export type HostReply = Extract<FromHost, { type: 'result' | 'error' }>;

interface PendingWrite {
  resolve(reply: HostReply): void;
  reject(error: Error): void;
}

/** What the worker said when it was ready. */
export interface HostReady {
  kinds?: readonly SinkKind[];
}

/** Timeouts of the worker's start and close, in ms. */
export interface HostTimeouts {
  startTimeoutMs: number;
  closeTimeoutMs: number;
}

/**
 * One sink's worker thread, seen from the request thread: started on demand, restarted on the next
 * write after it stopped unexpectedly, closed once. Writes are posted with an id and settle with the
 * worker's reply; when the worker stops, every write it was running fails as retryable (counted in
 * `writesLostToRestarts`), so the dispatcher retries it. The worker never keeps the process alive
 * unless a write is waiting for it.
 */
export class SinkHostThread {
  private worker: Worker | undefined;
  private starting: Promise<HostReady> | undefined;
  private readonly pending = new Map<number, PendingWrite>();
  private nextId = 1;
  private closing = false;
  private abandonedInARow = 0;
  private started = 0;
  private writesLost = 0;
  /** Busy time of the workers that have stopped, and the last reading of the current one. */
  private activeMsBefore = 0;
  private activeMsNow = 0;
  /** CPU time of the workers that have stopped, and the last one the current worker reported. */
  private cpuMsBefore = 0;
  private cpuMsNow: number | undefined;

  constructor(
    private readonly data: SinkHostData,
    private readonly timeouts: HostTimeouts,
    private readonly warn: (message: string) => void,
  ) {}

  /** Starts the worker unless it runs; resolves when it has built its sink, rejects with why it could not. */
  start(): Promise<HostReady> {
    if (this.closing) return Promise.reject(new SinkWriteError(`sink "${this.data.name}" is shut down`, { retryable: false }));
    this.starting ??= this.spawn().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  /**
   * Posts a batch (as JSON: the worker gets what an in-process sink would serialise — `toJSON`, a
   * `Buffer`'s JSON form — never a structured clone that drops prototypes) and resolves with the
   * worker's reply. Rejects (retryable) when the worker stops first. A write whose signal aborted and
   * that the worker has not answered within {@link ABANDON_AFTER_MS} is given up (its batch is not
   * kept); after {@link RECYCLE_AFTER_ABANDONED} such writes in a row the worker is replaced.
   */
  async write(batch: readonly SinkItem[], attempt: number, signal: AbortSignal): Promise<HostReply> {
    await this.start();
    if (signal.aborted) throw signal.reason; // aborted while the worker was starting: never post it
    const worker = this.worker;
    if (!worker) throw new SinkWriteError(`the worker thread of sink "${this.data.name}" stopped while starting; will retry`);
    let text: string;
    try {
      text = JSON.stringify(batch);
    } catch (error) {
      // The dispatcher refuses what JSON cannot hold (circular, BigInt) before it gets here.
      throw new SinkWriteError(`a batch could not be serialised for the worker thread: ${errorMessage(error)}`, { retryable: false });
    }
    const id = this.nextId++;
    const reply = new Promise<HostReply>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.post(worker, { type: 'write', id, batch: text, attempt });
    if (this.pending.size === 1) worker.ref();
    const onAbort = () => {
      this.post(worker, { type: 'abort', id, message: errorMessage(signal.reason), code: failureCode(signal.reason) });
      this.abandonLater(worker, id, signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await reply;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Gives up on an aborted write the worker does not answer; replaces a worker that keeps ignoring aborts. */
  private abandonLater(worker: Worker, id: number, reason: unknown): void {
    const timer = setTimeout(() => {
      const waiting = this.pending.get(id);
      if (!waiting) return;
      this.pending.delete(id);
      if (this.pending.size === 0) this.worker?.unref();
      waiting.reject(reason instanceof Error ? reason : new Error(String(reason)));
      if (++this.abandonedInARow >= RECYCLE_AFTER_ABANDONED && this.worker === worker) {
        this.warn(`the worker thread of sink "${this.data.name}" ignored ${this.abandonedInARow} aborted writes in a row; replacing it`);
        this.abandonedInARow = 0;
        void worker.terminate();
      }
    }, ABANDON_AFTER_MS);
    timer.unref();
  }

  /** Asks the worker to shut its sink down, waits for it (bounded), then ends the thread. Idempotent. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const worker = this.worker;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      worker.on('message', (message: FromHost) => message.type === 'closed' && resolve());
    });
    this.post(worker, { type: 'shutdown' });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, this.timeouts.closeTimeoutMs)))]);
    clearTimeout(timer);
    this.readActiveTime();
    await worker.terminate();
  }

  stats(): SinkHostStats {
    this.readActiveTime();
    return {
      thread: 'worker',
      running: this.worker !== undefined,
      restarts: Math.max(0, this.started - 1),
      writesLostToRestarts: this.writesLost,
      activeMs: Math.round(this.activeMsBefore + this.activeMsNow),
      cpuMs: this.cpuMsNow === undefined && this.cpuMsBefore === 0 ? undefined : Math.round(this.cpuMsBefore + (this.cpuMsNow ?? 0)),
    };
  }

  private spawn(): Promise<HostReady> {
    const worker = new Worker(sinkHostScript(), { workerData: this.data, stdout: false, stderr: false });
    this.worker = worker;
    this.started++;
    this.activeMsNow = 0;
    this.cpuMsNow = undefined;
    return new Promise<HostReady>((resolve, reject) => {
      let ready = false;
      const timer = setTimeout(() => {
        if (ready) return;
        reject(new Error(`its worker thread did not start within ${this.timeouts.startTimeoutMs} ms (startTimeoutMs)`));
        void worker.terminate();
      }, this.timeouts.startTimeoutMs);
      worker.on('message', (message: FromHost) => {
        if (message.type === 'ready') {
          ready = true;
          clearTimeout(timer);
          resolve({ kinds: message.kinds });
        } else if (message.type === 'failed-to-start') {
          clearTimeout(timer);
          reject(new Error(message.message));
          void worker.terminate(); // whatever its factory opened before it threw must not live on
        } else this.receive(message);
      });
      worker.on('error', (error) => {
        if (!ready) reject(error);
        else this.warn(`the worker thread of sink "${this.data.name}" failed: ${errorMessage(error)}`);
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        if (!ready) reject(new Error(`its worker thread exited with code ${code} before it was ready`));
        this.stopped(worker, code);
      });
      // After the listeners: adding a 'message' listener refs the worker again. The start timer keeps
      // the process alive while it starts; a pending write refs it; an idle worker never does.
      worker.unref();
    });
  }

  private receive(message: FromHost): void {
    if (message.type === 'warning') {
      this.warn(message.message);
      return;
    }
    if (message.type !== 'result' && message.type !== 'error') return;
    if (message.cpuMs !== undefined) this.cpuMsNow = message.cpuMs;
    this.abandonedInARow = 0;
    const waiting = this.pending.get(message.id);
    if (!waiting) return; // a reply after the write was given up on
    this.pending.delete(message.id);
    if (this.pending.size === 0) this.worker?.unref();
    waiting.resolve(message);
  }

  /** The worker ended: fail what it was running (retryable), so the next write starts a new one. */
  private stopped(worker: Worker, code: number): void {
    if (this.worker !== worker) return;
    this.readActiveTime();
    this.activeMsBefore += this.activeMsNow;
    this.activeMsNow = 0;
    this.cpuMsBefore += this.cpuMsNow ?? 0;
    this.cpuMsNow = undefined;
    this.worker = undefined;
    this.starting = undefined;
    if (this.pending.size === 0) return;
    this.writesLost += this.pending.size;
    const lost = [...this.pending.values()];
    this.pending.clear();
    const error = new SinkWriteError(
      `the worker thread of sink "${this.data.name}" stopped (exit code ${code}) during this write; ` +
        'a new one starts on the next write and the batch is retried',
    );
    for (const write of lost) write.reject(error);
  }

  private readActiveTime(): void {
    if (!this.worker) return;
    try {
      // an exited worker reads 0: keep the last reading
      this.activeMsNow = Math.max(this.activeMsNow, this.worker.performance.eventLoopUtilization().active);
    } catch {
      // no reading: keep the last one
    }
  }

  private post(worker: Worker, message: ToHost): void {
    worker.postMessage(message);
  }
}

/** The failures of a reply, as `SinkWriteResult.failed` wants them. */
export function failuresOf(failed: readonly HostItemFailure[]): SinkItemFailure[] {
  return failed.map(({ message, ...rest }) => ({ ...rest, error: message }));
}
