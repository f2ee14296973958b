import { getMaxListeners, setMaxListeners } from 'node:events';
import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkAttachContext, SinkProcessorOptions, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { type AwsBatchSinkOptions, type AwsBatchSinkSettings, type AwsOptionsSpec, checkAwsBatchSinkOptions } from './aws-batch-options';
import { awsEntryMayCause, awsError, type AwsFailedEntry, awsFailedEntry } from './aws-errors';
import { AWS_MAX_BATCH_ENTRIES, type AwsMessage, buildAwsMessage } from './aws-messages';
import { findAppClient } from './app-client';
import { chunk } from './chunks';
import { isolate } from './isolate';
import { ItemMemo } from './item-memo';
import { Partitions } from './partitions';
import { runLimited } from './run-limited';
import { SinkConfigError } from './sink-config.error';
import { WriteProgress } from './write-progress';

/** What the sink uses of an AWS SDK v3 client (`SQSClient`, `SNSClient`). */
export interface AwsClientLike {
  send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
  destroy(): void;
}

/** Whether a value is an AWS SDK v3 client: it sends commands and has a middleware stack. */
export function isAwsClient(value: unknown): value is AwsClientLike {
  const v = value as Partial<AwsClientLike> & { middlewareStack?: unknown } | null;
  return typeof value === 'object' && value !== null && typeof v!.send === 'function' && typeof v!.destroy === 'function' && typeof v!.middlewareStack === 'object';
}

/** A batch call's answer (SQS `SendMessageBatch`, SNS `PublishBatch`). */
export interface AwsBatchAnswer {
  Successful?: Array<{ Id?: string }>;
  Failed?: AwsFailedEntry[];
}

/** What distinguishes one AWS batch service from another, for {@link AwsBatchSink}. */
export interface AwsBatchService extends AwsOptionsSpec {
  /** `SQS`, `SNS`. */
  service: string;
  /** The SDK package and its client class: `@aws-sdk/client-sqs`, `SQSClient`. */
  packageName: string;
  clientClass: string;
  /** How an app registers its client under the default token, for the bootstrap error. */
  register: string;
  /** The batch command for these messages, built with the SDK module's command class. */
  command(sdk: Record<string, unknown>, destination: string, messages: readonly AwsMessage[]): unknown;
  /** The dispatcher settings the sink prefers. */
  processorDefaults: Partial<SinkProcessorOptions>;
}

/** One batch call's messages: their indexes in the write's batch. */
interface Call {
  destination: string;
  indexes: number[];
}

/**
 * What SQS and SNS sinks share: messages built and checked when items are deferred, grouped by
 * destination, sent 10 at a time within the size limit (a few calls at once), each entry's answer
 * read — `Successful` delivered, `Failed` retried (throttling, the service's fault) or dead-lettered
 * (the sender's fault, with AWS's code and message) — and a call refused as a whole because of one
 * entry split until that entry is alone. Entries that went through are never sent again by the sink.
 */
export abstract class AwsBatchSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[];
  readonly defaults: Partial<SinkProcessorOptions>;

  private readonly settings: AwsBatchSinkSettings;
  private client: AwsClientLike | undefined;
  private sdk: Record<string, unknown> | undefined;
  private own = false;
  private closed = false;
  /** Each item's message, from its validation to its write (an item copied — spooled, offloaded — is built again); on the item, see ItemMemo. */
  private readonly messages = new ItemMemo<AwsMessage>('AWS batch message');

  protected constructor(
    private readonly service: AwsBatchService,
    options: AwsBatchSinkOptions | undefined,
  ) {
    this.settings = checkAwsBatchSinkOptions(service, options as (AwsBatchSinkOptions & Record<string, unknown>) | undefined);
    this.name = this.settings.name;
    this.kinds = this.settings.kinds;
    this.defaults = service.processorDefaults;
  }

  /** Loads the SDK, finds the app's client (or builds the sink's own from options), and holds the app's open through the drain. */
  async attach(context: SinkAttachContext): Promise<void> {
    const { label } = this.settings;
    const { packageName, clientClass } = this.service;
    try {
      this.sdk = (await import(packageName)) as Record<string, unknown>;
    } catch (error) {
      throw new SinkConfigError(`${label}: the "${packageName}" package is not installed (${errorMessage(error)}). Install it: npm install ${packageName}`, 'client');
    }
    const option = this.settings.client;
    if (isAwsClient(option)) this.client = option;
    else if (typeof option === 'object' && option !== null && Object.getPrototypeOf(option) === Object.prototype) {
      const Client = this.sdk[clientClass] as new (config: unknown) => AwsClientLike;
      this.client = new Client(option);
      this.own = true;
    } else {
      this.client = findAppClient(context, { sink: label, option: 'client', token: option, is: isAwsClient, what: `an AWS SDK ${clientClass}`, register: this.service.register });
    }
    if (!this.own) context.holdOpen(this.client as object);
  }

  /** Refuses, when it is deferred, an item the service would refuse: see `buildAwsMessage`. */
  validate(item: SinkItem): void {
    this.message(item);
  }

  async write(batch: readonly SinkItem[], { signal }: SinkWriteContext): Promise<void | SinkWriteResult> {
    const { label, maxPayloadBytes, concurrency } = this.settings;
    const client = this.client;
    if (this.closed || !client) throw new SinkWriteError(`${label} is ${this.closed ? 'shut down' : 'not attached: add it to DeferredWorkModule'}`, { retryable: false });
    const progress = new WriteProgress(batch.length);
    const parts = new Partitions<string, string, AwsMessage>();
    batch.forEach((item, index) => {
      try {
        const message = this.message(item);
        parts.add(message.destination, index, message, () => message.destination);
      } catch (error) {
        progress.fail([index], error, false);
      }
    });
    const calls: Call[] = [];
    for (const part of parts.list()) {
      const { chunks, tooLarge } = chunk(part.values, { maxCount: AWS_MAX_BATCH_ENTRIES, maxBytes: maxPayloadBytes }, (m) => m.bytes);
      for (const p of tooLarge) progress.fail([part.indexes[p]], new SinkWriteError(`${label}: the message is over maxPayloadBytes ${maxPayloadBytes}`, { retryable: false }), false);
      for (const c of chunks) calls.push({ destination: part.destination, indexes: c.positions.map((p) => part.indexes[p]) });
    }
    // The SDK listens on the signal once per request in flight (and a split call once per piece, ≤ 10):
    // Node would warn of a leak past 10 listeners with a `concurrency` above 9.
    const listeners = concurrency * AWS_MAX_BATCH_ENTRIES + 1;
    if (getMaxListeners(signal) < listeners) setMaxListeners(listeners, signal);
    const work = runLimited(calls, concurrency, (call) => this.send(client, call, batch, progress, signal), signal);
    const ended = await progress.until(work, signal);
    return progress.result(false, ended ? new SinkWriteError(`${label}: the service's answer did not list this message; it is sent again`) : signal.reason);
  }

  /** Destroys the sink's own client (built from options); the app's client is the app's to destroy. */
  async shutdown(): Promise<void> {
    this.closed = true;
    if (this.own) this.client?.destroy();
  }

  /** One batch call, split if the service refuses it as a whole because of one entry; each entry's outcome goes to `progress`. */
  private async send(client: AwsClientLike, call: Call, batch: readonly SinkItem[], progress: WriteProgress, signal: AbortSignal): Promise<void> {
    const { label } = this.settings;
    const { service } = this.service;
    const outcomes = await isolate(
      call.indexes,
      async (indexes) => {
        const byId = new Map<string, number>();
        const messages = indexes.map((index) => {
          const message = this.messages.get(batch[index])!;
          let entryId = message.entryId;
          for (let n = 1; byId.has(entryId); n++) entryId = `${message.entryId.slice(0, 74)}_${n}`; // unique within the call
          byId.set(entryId, index);
          return entryId === message.entryId ? message : { ...message, entryId };
        });
        const answer = (await client.send(this.service.command(this.sdk!, call.destination, messages), { abortSignal: signal })) as AwsBatchAnswer;
        for (const ok of answer.Successful ?? []) {
          const index = byId.get(ok.Id ?? '');
          if (index !== undefined) progress.confirm([index]);
        }
        for (const failed of answer.Failed ?? []) {
          const index = byId.get(failed.Id ?? '');
          if (index === undefined) continue;
          const { code, retryable } = awsFailedEntry(failed);
          const error = new SinkWriteError(`${label}: ${service} refused the message to ${call.destination}: ${failed.Code ?? 'no code'}: ${failed.Message ?? 'no message'}`, { code, retryable });
          progress.failEntry({ index, error, retryable, ...(code ? { code } : {}) });
        }
        // an entry in neither list: not confirmed, so it is retried (the write resolves with it failed)
      },
      { signal, splits: awsEntryMayCause },
    );
    outcomes.forEach((failure, position) => {
      if (failure === undefined) return;
      const { code, retryable } = awsError(failure);
      const error = new SinkWriteError(`${label}: ${service} batch call to ${call.destination} failed: ${code ? `${code}: ` : ''}${errorMessage(failure)}`, { cause: failure, code, retryable });
      progress.failEntry({ index: call.indexes[position], error, retryable, ...(code ? { code } : {}) });
    });
  }

  /** The item's message (built once: when it is validated, kept for its write). */
  private message(item: SinkItem): AwsMessage {
    const known = this.messages.get(item);
    if (known) return known;
    const s = this.settings;
    const message = buildAwsMessage(item, {
      label: s.label,
      destinationOption: this.service.destinationOption,
      destination: s.destination,
      isDestination: this.service.isDestination,
      body: s.body,
      messageAttributes: s.messageAttributes,
      groupId: s.groupId,
      maxPayloadBytes: s.maxPayloadBytes,
    });
    this.messages.set(item, message);
    return message;
  }
}
