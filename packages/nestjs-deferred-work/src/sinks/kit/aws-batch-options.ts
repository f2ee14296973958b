import type { SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkProcessorOptions } from '../../core/sink.interface';
import { type AwsMessageAttribute, defaultAwsBody } from './aws-messages';
import { itemParts } from './item-parts';
import { checkOptionsObject, checkSinkKinds, checkSinkName, checkString, checkWholeNumber, optionError, type SinkSettingsBase } from './option-checks';

/** Options SQS and SNS sinks share (each sink adds its destination and documents its defaults). */
export interface AwsBatchSinkOptions {
  /** Unique sink name, used by routing. */
  name?: string;
  /**
   * The AWS SDK client to send through, one of: an injection token the app registers its client
   * under (resolved at bootstrap); the client itself; or client options (`{ region, endpoint, … }`),
   * from which the sink builds a client of its own (destroyed at shutdown). Credentials come from the
   * SDK's usual chain (environment, profile, role); the sink never reads or logs them. The sink never
   * destroys the app's client; it keeps it open until its messages are sent at shutdown.
   */
  client?: unknown;
  /** Which kinds of item the sink takes. Default `['job', 'log', 'metric']`. */
  kinds?: readonly SinkKind[];
  /** The message body of an item. Must be pure (it runs when the item is deferred). Default: the item as JSON (`id`, `kind`, `name`, `payload`, `createdAt`). */
  body?: (item: SinkItem) => string;
  /**
   * Message attributes of an item (at most 10 with the correlation's). The item's `requestId` and
   * `traceparent` are added as `String` attributes when there is room. Default: none but those.
   */
  messageAttributes?: (item: SinkItem) => Record<string, AwsMessageAttribute>;
  /**
   * The `MessageGroupId` on a FIFO destination (name ending in `.fifo`), a string or a function of the
   * item. The service keeps a group's messages in the order it receives them; the sink runs up to
   * `concurrency` calls at once and sends a retried message after those that went through meanwhile,
   * so set `concurrency: 1` where the order across calls matters. Default: the item's name (a job's
   * queue, a log record's level, a metric's name).
   */
  messageGroupId?: string | ((item: SinkItem) => string);
  /** Largest message, and largest batch call, in bytes (body and attributes), as the service counts them. */
  maxPayloadBytes?: number;
  /** Most batch calls (10 entries each) one write runs at once. Default `5`. */
  concurrency?: number;
}

/** The part of an AWS sink's defaults that differs by service. */
export interface AwsBatchSinkDefaults {
  readonly name: string;
  readonly client: string;
  readonly maxPayloadBytes: number;
  readonly concurrency: number;
  readonly kinds: readonly SinkKind[];
}

/** What an AWS sink's options check needs to know of its service. */
export interface AwsOptionsSpec {
  sinkClass: string;
  /** The destination option: `queueUrl`, `topicArn`. */
  destinationOption: string;
  /** What a destination looks like, for messages: `a queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>)`. */
  destinationExample: string;
  isDestination(value: string): boolean;
  defaults: AwsBatchSinkDefaults;
}

/** An AWS sink's options, checked, every default applied. */
export interface AwsBatchSinkSettings extends SinkSettingsBase {
  readonly destination: (item: SinkItem) => string;
  readonly body: (item: SinkItem) => string;
  readonly messageAttributes?: (item: SinkItem) => Record<string, AwsMessageAttribute>;
  readonly groupId: (item: SinkItem) => string;
  readonly maxPayloadBytes: number;
  readonly concurrency: number;
}

/** Checks an SQS or SNS sink's options (`options[spec.destinationOption]` is required). */
export function checkAwsBatchSinkOptions(spec: AwsOptionsSpec, options: (AwsBatchSinkOptions & Record<string, unknown>) | undefined): AwsBatchSinkSettings {
  const { sinkClass, destinationOption: option, defaults } = spec;
  const o = checkOptionsObject(sinkClass, options, `{ ${option}: '…' } (${spec.destinationExample}, or a function of the item)`);
  const name = checkSinkName(sinkClass, o.name, defaults.name);
  const label = `${sinkClass} "${name}"`;
  const raw = o[option];
  let destination: (item: SinkItem) => string;
  if (typeof raw === 'function') destination = raw as (item: SinkItem) => string;
  else if (typeof raw === 'string' && spec.isDestination(raw)) destination = () => raw;
  else throw optionError(label, option, raw === undefined ? 'is required' : `must be ${spec.destinationExample} or a function of the item`, `Pass ${spec.destinationExample}.`, raw);
  const kinds = checkSinkKinds(label, o.kinds, defaults.kinds);
  for (const fn of ['body', 'messageAttributes'] as const) {
    if (o[fn] !== undefined && typeof o[fn] !== 'function') throw optionError(label, fn, 'must be a function of the item', 'Pass (item) => … or leave it out.', o[fn]);
  }
  let groupId: (item: SinkItem) => string;
  if (typeof o.messageGroupId === 'function') groupId = o.messageGroupId;
  else if (o.messageGroupId === undefined) groupId = (item) => itemParts(item).name;
  else {
    const fixed = checkString(label, 'messageGroupId', o.messageGroupId, { fallback: '', fix: 'Pass a group id, a function of the item, or leave it out for the item name.' });
    groupId = () => fixed;
  }
  const maxPayloadBytes = checkWholeNumber(label, 'maxPayloadBytes', o.maxPayloadBytes, { min: 1024, max: defaults.maxPayloadBytes, fallback: defaults.maxPayloadBytes, unit: 'bytes' });
  const concurrency = checkWholeNumber(label, 'concurrency', o.concurrency, { min: 1, max: 64, fallback: defaults.concurrency });
  return {
    name,
    label,
    kinds,
    client: o.client ?? defaults.client,
    destination,
    body: o.body ?? defaultAwsBody,
    messageAttributes: o.messageAttributes,
    groupId,
    maxPayloadBytes,
    concurrency,
  };
}

/** An AWS sink's option defaults: every kind, five calls at once, and the service's name, token and size limit. */
export function awsBatchSinkDefaults(name: string, client: string, maxPayloadBytes: number): AwsBatchSinkDefaults {
  return Object.freeze({ name, client, kinds: Object.freeze(['job', 'log', 'metric'] as const), maxPayloadBytes, concurrency: 5 });
}

/**
 * Dispatcher settings of the SQS and SNS sinks:
 * - `maxBatchSize` 100: ten batch calls of 10, five at a time — two round trips.
 * - `writeTimeoutMs` 15000: the app's SDK client retries throttling and 5xx on its own within a call
 *   (3 tries with backoff by default); the write allows for that.
 */
export const AWS_BATCH_PROCESSOR_DEFAULTS: Partial<SinkProcessorOptions> = Object.freeze({
  maxBatchSize: 100,
  writeTimeoutMs: 15_000,
});
