import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { JobItem, SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, HeldClient, SinkAttachContext, SinkItemFailure, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { abortable } from '../kit/abortable';
import { chunk } from '../kit/chunks';
import { CONNECTION_LOST, failureCode } from '../kit/failure-codes';
import { inTurns } from '../kit/in-turns';
import { findAppClient } from '../kit/app-client';
import { itemId } from '../kit/item-id';
import { readyState, unavailableError } from './client-connection';
import { checkClientProxySinkOptions, isClientProxy, unknownTransportError } from './client-proxy-sink.checks';
import {
  BROKER_PROCESSOR_DEFAULTS,
  type BrokerTransport,
  type ClientProxyLike,
  type ClientProxySinkDescription,
  type ClientProxySinkOptions,
} from './client-proxy-sink.options';
import { checkTransportPackages, loadNatsHeaders, loadNestRecords } from './microservices-packages';
import { MESSAGES_PER_SEND, type OutgoingMessage, type Transport } from './transport.interface';
import { createTransport, detectTransport, expectedConfirmed } from './transports';

/** Pieces of one write being handed to the client at once (a piece is done once handed over; its confirmations are awaited with the rest). */
const SENDS_IN_FLIGHT = 2;

/** A send of one item still waiting for the broker's confirmation (kept across retries). */
interface PendingSend {
  promise: Promise<void>;
  settled: boolean;
  /** Confirmed by the broker (a confirmed transport's send resolved), maybe after its write had timed out. */
  confirmed: boolean;
}

/**
 * Delivers `job` items as events through a `@nestjs/microservices` client — `client.emit(pattern,
 * data)` on RabbitMQ, NATS, Redis, MQTT or Kafka — reusing the client the app registered with
 * `ClientsModule` (found by its injection token: no second connection) or one given directly. One
 * sink per client. `work.job(sinkName, pattern, data)`: the job's queue is the sink's name, its name
 * the pattern, its data the event's payload (see `emitEvent()`).
 *
 * An item counts as delivered only when the transport confirmed it, where it can (`confirmed`; see
 * `describe()`). Every message carries a stable id (the job's `jobId`, or the item's own id, given
 * when it was accepted). Nothing is sent while the client is not connected, so its own offline buffer never
 * holds a message the dispatcher gave up on; and a message still waiting for its confirmation when
 * its write timed out is not sent again by the retry: the retry waits for that send instead (and
 * counts it delivered at once if the broker confirmed it in the meantime).
 */
export class ClientProxySink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[] = Object.freeze(['job'] as const);
  readonly defaults: Partial<SinkProcessorOptions> = BROKER_PROCESSOR_DEFAULTS;
  private readonly options: ClientProxySinkOptions;
  private client: ClientProxyLike | undefined;
  private transport: Transport | undefined;
  private transportName: BrokerTransport | undefined;
  /** The client as held open until the drain ends (`drainBeforeClientClose`). */
  private held: HeldClient | undefined;
  private readonly pending = new WeakMap<JobItem, PendingSend>();

  constructor(options: ClientProxySinkOptions) {
    this.name = checkClientProxySinkOptions(options);
    const { client, transport } = options;
    this.options = options;
    this.client = client;
    this.transportName = transport ?? (client ? detectTransport(client) : undefined);
    if (client && !this.transportName) throw unknownTransportError(this.name, client);
  }

  /** Whether an item is counted as delivered only once the broker confirmed it (see `describe()`). Known once the client is (at bootstrap for a registered one). */
  get confirmed(): boolean {
    return this.transport?.confirmed ?? expectedConfirmed(this.transportName, this.options);
  }

  /** What "delivered" means for this sink's transport, and where a consumer finds the stable id. */
  describe(): ClientProxySinkDescription {
    return {
      name: this.name,
      transport: this.transportName,
      confirmed: this.confirmed,
      delivered: this.transport?.delivered ?? 'not known before bootstrap',
      messageId: this.transport?.messageId ?? 'not known before bootstrap',
    };
  }

  /** Refuses, when deferred, a job meant for another destination (its queue is not this sink's name), and an event its transport's client would refuse (Kafka: see `kafka-messages.ts`). */
  validate(item: SinkItem): void {
    if (item.kind === 'job' && item.queue !== this.name) {
      throw new Error(
        `ClientProxySink "${this.name}" emits jobs whose queue is "${this.name}", got "${item.queue}". ` +
          `Defer it with work.job('${this.name}', pattern, data) or emitEvent(work, '${this.name}', pattern, data), or route it to the sink named "${item.queue}".`,
      );
    }
    if (item.kind === 'job') this.transport?.validate?.(item.data);
  }

  /** Finds the registered client, learns its transport, loads the record builders, and holds the client open until the drain ends. */
  async attach(context: SinkAttachContext): Promise<void> {
    if (!this.client) {
      const token = this.options.clientToken;
      this.client = findAppClient(context, {
        sink: `ClientProxySink "${this.name}"`,
        option: 'clientToken',
        token,
        moduleRef: this.options.moduleRef,
        is: isClientProxy,
        what: 'a ClientProxy of @nestjs/microservices',
        register: `ClientsModule.register([{ name: ${typeof token === 'string' ? `'${token}'` : 'TOKEN'}, transport, options }])`,
      });
      this.transportName ??= detectTransport(this.client);
      if (!this.transportName) throw unknownTransportError(this.name, this.client);
    }
    const clientClass = detectTransport(this.client) === this.transportName ? ((this.client as { constructor?: { name?: string } }).constructor?.name ?? 'client') : undefined;
    if (clientClass) checkTransportPackages(this.name, this.transportName!, clientClass);
    const records = await loadNestRecords(this.name);
    const natsHeaders = this.transportName === 'nats' ? await loadNatsHeaders(this.name) : undefined;
    this.transport = createTransport(this.transportName!, {
      client: this.client,
      records,
      natsHeaders,
      payloadIdKey: this.options.payloadIdKey ?? (this.transportName === 'redis' ? 'dwMessageId' : undefined),
      jetStream: this.options.nats?.jetStream ?? false,
      ackTimeoutMs: this.options.nats?.ackTimeoutMs ?? 2000,
      qos: this.options.mqtt?.qos ?? 1,
      noSubscribers: this.options.redis?.noSubscribers ?? 'fail',
      warn: (message) => context.warn(message),
    });
    if (!this.confirmed) {
      context.warn(
        `ClientProxySink "${this.name}" (${this.transportName}): the broker does not confirm these messages; they are counted as delivered once ` +
          `${this.transport.delivered}. See docs/sinks/microservices.md for a confirmed setup.`,
      );
    }
    if (this.options.drainBeforeClientClose ?? true) this.held = context.holdOpen(this.client);
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    if (signal.aborted) throw signal.reason;
    const transport = this.transport;
    if (!transport) throw new SinkWriteError(`ClientProxySink "${this.name}" was not attached; add it to DeferredWorkModule's sinks.`, { retryable: false });
    const failed: SinkItemFailure[] = [];
    const toSend: Array<{ index: number; item: JobItem; message: OutgoingMessage }> = [];
    const waiting: Array<{ index: number; send: PendingSend }> = [];
    batch.forEach((item, index) => {
      if (item.kind !== 'job') {
        failed.push({ index, retryable: false, error: new SinkWriteError(`ClientProxySink "${this.name}" takes jobs only (job(sink, pattern, data)), got a ${item.kind} item.`) });
        return;
      }
      const previous = this.pending.get(item);
      // still waiting for its confirmation, or confirmed after its write timed out: never sent twice
      if (previous && (!previous.settled || previous.confirmed)) waiting.push({ index, send: previous });
      else toSend.push({ index, item, message: { pattern: item.name, data: item.data, id: this.idOf(item) } });
    });
    try {
      return await this.sendAll(transport, toSend, signal, failed, waiting);
    } catch (error) {
      if (!signal.aborted || error !== signal.reason) throw error;
      return cutShort(batch.length, failed, waiting, signal.reason);
    }
  }

  /** Sends `toSend`, awaits every confirmation of the write (`waiting`), and returns its failures. Rejects with the signal's reason when it aborts. */
  private async sendAll(
    transport: Transport,
    toSend: Array<{ index: number; item: JobItem; message: OutgoingMessage }>,
    signal: AbortSignal,
    failed: SinkItemFailure[],
    waiting: Array<{ index: number; send: PendingSend }>,
  ): Promise<void | SinkWriteResult> {
    if (toSend.length > 0) {
      // a large batch in pieces, a turn of the event loop apart (requests are served in between), two in flight
      const { chunks } = chunk(toSend, { maxCount: transport.messagesPerSend ?? MESSAGES_PER_SEND });
      await abortable(
        inTurns(
          chunks.length,
          SENDS_IN_FLIGHT,
          (c) => this.sendPiece(transport, chunks[c].values, signal, failed, waiting),
          (c, error) => {
            for (const { index } of chunks[c].values) failed.push({ index, error: this.sendError(error), retryable: true });
          },
        ),
        signal,
      );
    }
    const outcomes = await abortable(Promise.all(waiting.map(({ send }) => send.promise.then(() => undefined, (error: unknown) => error ?? new Error('failed')))), signal);
    let anySent = false;
    outcomes.forEach((error, i) => {
      if (error === undefined) anySent = true;
      else failed.push({ index: waiting[i].index, error: this.sendError(error), retryable: !(error instanceof SinkWriteError) || error.retryable });
    });
    if (anySent && transport.afterBatch) {
      try {
        await abortable(transport.afterBatch(), signal);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        const failure = new SinkWriteError(`${transport.transport}: the connection failed before the batch was flushed: ${errorMessage(error)}`, { cause: error, code: failureCode(error) ?? CONNECTION_LOST });
        const counted = new Set(failed.map((f) => f.index));
        for (const { index } of waiting) if (!counted.has(index)) failed.push({ index, error: failure });
      }
    }
    if (failed.length === 0) return undefined;
    failed.sort((a, b) => a.index - b.index);
    return { failed };
  }

  /**
   * Hands one piece of a write to the client when it is up (else fails its items: retryable unless the
   * client is closed for good, or when its state could not be read), registering each send in `pending`
   * (never sent twice) and in `waiting` (whose confirmations the write awaits). Nothing is sent once
   * the write's signal aborted.
   */
  private async sendPiece(transport: Transport, piece: ReadonlyArray<{ index: number; item: JobItem; message: OutgoingMessage }>, signal: AbortSignal, failed: SinkItemFailure[], waiting: Array<{ index: number; send: PendingSend }>): Promise<void> {
    if (signal.aborted) return;
    let state: Awaited<ReturnType<typeof readyState>>;
    try {
      state = await readyState(this.client!, transport, this.held, signal);
    } catch (error) {
      if (signal.aborted) return; // the write ends with the signal's reason
      for (const { index } of piece) failed.push({ index, error: this.sendError(error), retryable: true });
      return;
    }
    if (signal.aborted) return;
    if (state !== 'up') {
      const error = unavailableError(this.name, this.transportName, state);
      for (const { index } of piece) failed.push({ index, error, retryable: state !== 'closed' });
      return;
    }
    let sends: Array<Promise<void>>;
    try {
      sends = transport.send(piece.map((s) => s.message));
    } catch (error) {
      sends = piece.map(() => Promise.reject(error));
    }
    piece.forEach(({ index, item }, i) => {
      const send: PendingSend = { promise: sends[i], settled: false, confirmed: false };
      send.promise.then(
        () => {
          send.confirmed = transport.confirmed;
          send.settled = true;
        },
        () => {
          send.settled = true;
        },
      );
      this.pending.set(item, send);
      waiting.push({ index, send });
    });
  }

  /** Stops watching the client. The sink never closes a client: a registered one is closed by `ClientsModule`, a given one by you. */
  shutdown(): void {
    this.transport?.dispose?.();
  }

  /** The stable id of an item: its `jobId`, or the item's own id (the same on every retry and replay). */
  private idOf(item: JobItem): string {
    const given = item.opts?.jobId;
    if (given !== undefined && given !== null && given !== '') return String(given);
    return itemId(item);
  }

  private sendError(error: unknown): unknown {
    if (error instanceof SinkWriteError) return error;
    return new SinkWriteError(`ClientProxySink "${this.name}" (${this.transportName}): ${errorMessage(error)}`, { cause: error, code: failureCode(error) });
  }
}

/**
 * The result of a write cut short by its signal: what failed stays failed, what the broker confirmed
 * stays delivered (not sent again, not dead-lettered on a last attempt), the rest fails with `reason`
 * (retryable; a send still pending is awaited by the next attempt instead of being sent twice).
 */
function cutShort(size: number, failed: SinkItemFailure[], waiting: ReadonlyArray<{ index: number; send: PendingSend }>, reason: unknown): SinkWriteResult | undefined {
  const done = new Set(failed.map((f) => f.index));
  for (const { index, send } of waiting) if (send.settled && send.confirmed) done.add(index);
  const all = [...failed];
  const code = failureCode(reason); // ETIMEDOUT for the write's timeout
  for (let index = 0; index < size; index++) if (!done.has(index)) all.push({ index, error: reason, retryable: true, ...(code === undefined ? {} : { code }) });
  if (all.length === 0) return undefined;
  all.sort((a, b) => a.index - b.index);
  return { failed: all };
}
