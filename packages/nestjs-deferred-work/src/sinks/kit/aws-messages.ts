import type { SinkItem } from '../../core/items/deferred-item.interface';
import { itemId } from './item-id';
import { itemParts } from './item-parts';
import { describeValue } from './option-checks';
import { traceparent } from './traceparent';

/** A message attribute of SQS and SNS: a `String`, `Number` or `Binary` value (the type may carry a `.label`). */
export interface AwsMessageAttribute {
  DataType: string;
  StringValue?: string;
  BinaryValue?: Uint8Array;
}

/** SQS and SNS: at most 10 message attributes per message. */
export const AWS_MAX_ATTRIBUTES = 10;
/** SQS and SNS batch calls: at most 10 entries per call. */
export const AWS_MAX_BATCH_ENTRIES = 10;

/** One item as an SQS or SNS message, built when the item is deferred and kept for its write. */
export interface AwsMessage {
  /** The queue URL or topic ARN. */
  destination: string;
  /** The batch entry's `Id`: the item id within AWS's rules. */
  entryId: string;
  body: string;
  attributes: Record<string, AwsMessageAttribute>;
  /** FIFO destinations only. */
  groupId?: string;
  /** FIFO destinations only: the item's id. */
  deduplicationId?: string;
  /** What the service counts against its size limit: the body and every attribute's name, type and value. */
  bytes: number;
}

/**
 * The default message body: the item as JSON — `id`, `kind`, `name` (a job's queue, a log record's
 * level, a metric's name), `payload` (the rest of the item) and `createdAt` (epoch ms).
 */
export function defaultAwsBody(item: SinkItem): string {
  const { name, payload } = itemParts(item);
  return JSON.stringify({ id: itemId(item), kind: item.kind, name, payload, createdAt: item.createdAt });
}

/** An item id as a batch entry `Id`: only letters, digits, `-` and `_`, at most 80 characters. */
export function awsEntryId(id: string): string {
  return id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80);
}

/** Whether a queue URL or topic ARN names a FIFO queue or topic (its name ends in `.fifo`). */
export function isFifoDestination(destination: string): boolean {
  return destination.endsWith('.fifo');
}

/** The correlation attributes of an item: `requestId` and `traceparent`, as `String`s, when it has them. */
export function correlationAttributes(item: SinkItem): Record<string, AwsMessageAttribute> {
  const attributes: Record<string, AwsMessageAttribute> = {};
  const requestId = item.correlation?.requestId;
  // Best effort: a request id the services would refuse (empty — a client's blank `x-request-id` — or
  // with characters outside XML's) is left out rather than costing the item its message.
  if (requestId !== undefined && requestId !== '' && !INVALID_CHARACTER.test(requestId)) attributes.requestId = { DataType: 'String', StringValue: requestId };
  const trace = traceparent(item.correlation);
  if (trace !== undefined) attributes.traceparent = { DataType: 'String', StringValue: trace };
  return attributes;
}

/** Characters SQS and SNS take in a message body and string values: XML's (`#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF`). */
const INVALID_CHARACTER = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
/** Attribute names: letters, digits, `_`, `-`, `.`; no leading or trailing `.`, no `..`; at most 256. */
const ATTRIBUTE_NAME = /^(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.-]{1,256}$/;
/** `MessageGroupId` and `MessageDeduplicationId`: 1 to 128 printable ASCII characters. */
const FIFO_ID = /^[\x21-\x7E]{1,128}$/;

/** The body's first invalid character, described, or `undefined`. */
function invalidCharacter(text: string): string | undefined {
  const found = INVALID_CHARACTER.exec(text);
  return found ? `U+${found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} at ${found.index}` : undefined;
}

/**
 * Checks message attributes by the service's rules (at most 10; names; `String`, `Number` or
 * `Binary` types with a value) and returns their size in bytes. Throws an `Error` saying what to fix.
 */
export function checkAwsAttributes(label: string, attributes: Record<string, AwsMessageAttribute>): number {
  const names = Object.keys(attributes);
  if (names.length > AWS_MAX_ATTRIBUTES) throw new Error(`${label}: a message has ${names.length} attributes, over the service's limit of ${AWS_MAX_ATTRIBUTES}; return fewer from messageAttributes(item)`);
  let bytes = 0;
  for (const name of names) {
    const attribute = attributes[name];
    if (!ATTRIBUTE_NAME.test(name) || /^(aws\.|amazon\.)/i.test(name)) {
      throw new Error(`${label}: message attribute name ${describeValue(name)} is not allowed: use letters, digits, "_", "-" and "." (not first, last or twice in a row), at most 256, not starting with "AWS." or "Amazon."`);
    }
    const type = attribute?.DataType;
    if (typeof type !== 'string' || !/^(String|Number|Binary)(\.[\x21-\x7E]+)?$/.test(type)) {
      throw new Error(`${label}: message attribute "${name}" has DataType ${describeValue(type)}; use 'String', 'Number' or 'Binary' (optionally with a ".label")`);
    }
    const binary = type.startsWith('Binary');
    const value = binary ? attribute.BinaryValue : attribute.StringValue;
    if (binary ? !(value instanceof Uint8Array) || value.length === 0 : typeof value !== 'string' || value === '') {
      throw new Error(`${label}: message attribute "${name}" of type ${type} needs a non-empty ${binary ? 'BinaryValue (bytes)' : 'StringValue'}`);
    }
    if (!binary) {
      const bad = invalidCharacter(value as string);
      if (bad) throw new Error(`${label}: message attribute "${name}" has a character the service refuses (${bad})`);
    }
    bytes += Buffer.byteLength(name) + Buffer.byteLength(type) + (binary ? (value as Uint8Array).length : Buffer.byteLength(value as string));
  }
  return bytes;
}

/** What {@link buildAwsMessage} needs of a sink's settings. */
export interface AwsMessageRules {
  label: string;
  /** The destination option's name, for messages: `queueUrl`, `topicArn`. */
  destinationOption: string;
  destination(item: SinkItem): string;
  /** Whether a destination has the service's shape (a URL, an ARN). */
  isDestination(value: string): boolean;
  body(item: SinkItem): string;
  messageAttributes?(item: SinkItem): Record<string, AwsMessageAttribute>;
  groupId(item: SinkItem): string;
  maxPayloadBytes: number;
}

/**
 * An item as an SQS or SNS message, checked against the service's rules: a destination of the right
 * shape, a non-empty body of allowed characters, at most 10 attributes (the item's correlation —
 * `requestId`, `traceparent` — added when there is room), the size limit, and on a FIFO destination
 * a valid `MessageGroupId` and the item id as `MessageDeduplicationId`. Throws an `Error` saying what
 * is wrong: called from `validate(item)`, the item is refused when it is deferred.
 */
export function buildAwsMessage(item: SinkItem, rules: AwsMessageRules): AwsMessage {
  const { label } = rules;
  const id = itemId(item);
  const destination = rules.destination(item);
  if (typeof destination !== 'string' || !rules.isDestination(destination)) {
    throw new Error(`${label}: ${rules.destinationOption}(item) returned ${describeValue(destination)}, which is not a ${rules.destinationOption === 'queueUrl' ? 'queue URL' : 'topic ARN'}`);
  }
  const body = rules.body(item);
  if (typeof body !== 'string' || body === '') throw new Error(`${label}: body(item) must return a non-empty string, got ${describeValue(body)}`);
  const bad = invalidCharacter(body);
  if (bad) throw new Error(`${label}: the message body has a character the service refuses (${bad}); encode the payload (e.g. base64) in body(item)`);
  const own = rules.messageAttributes?.(item) ?? {};
  if (typeof own !== 'object' || own === null || Array.isArray(own)) throw new Error(`${label}: messageAttributes(item) must return an object of attributes, got ${describeValue(own)}`);
  const attributes = { ...own };
  for (const [name, attribute] of Object.entries(correlationAttributes(item))) {
    if (!(name in attributes) && Object.keys(attributes).length < AWS_MAX_ATTRIBUTES) attributes[name] = attribute;
  }
  const bytes = Buffer.byteLength(body) + checkAwsAttributes(label, attributes);
  if (bytes > rules.maxPayloadBytes) {
    throw new Error(`${label}: the message is ${bytes} bytes (body and attributes), over maxPayloadBytes ${rules.maxPayloadBytes} (the service's limit); send a reference to the payload (e.g. an S3 key) instead`);
  }
  const message: AwsMessage = { destination, entryId: awsEntryId(id), body, attributes, bytes };
  if (isFifoDestination(destination)) {
    const groupId = rules.groupId(item);
    if (typeof groupId !== 'string' || !FIFO_ID.test(groupId)) {
      throw new Error(`${label}: messageGroupId for a FIFO destination must be 1 to 128 printable ASCII characters (no spaces), got ${describeValue(groupId)}`);
    }
    if (!FIFO_ID.test(id)) throw new Error(`${label}: the item id ${describeValue(id)} cannot be a MessageDeduplicationId (1 to 128 printable ASCII characters)`);
    message.groupId = groupId;
    message.deduplicationId = id;
  }
  return message;
}

/** The batch entry of a message: `Id`, the body under `bodyField` (SQS `MessageBody`, SNS `Message`), attributes and FIFO ids when set. */
export function awsBatchEntry(message: AwsMessage, bodyField: string): Record<string, unknown> {
  const entry: Record<string, unknown> = { Id: message.entryId, [bodyField]: message.body };
  if (Object.keys(message.attributes).length > 0) entry.MessageAttributes = message.attributes;
  if (message.groupId !== undefined) entry.MessageGroupId = message.groupId;
  if (message.deduplicationId !== undefined) entry.MessageDeduplicationId = message.deduplicationId;
  return entry;
}
