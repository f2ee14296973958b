import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One entry of a batch call, as the endpoint read it off the wire. */
export interface WireEntry {
  Id: string;
  body: string;
  attributes: Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>;
  groupId?: string;
  deduplicationId?: string;
}

/** A message the endpoint accepted (a FIFO duplicate within five minutes is answered but not recorded). */
export interface AwsRecord {
  destination: string;
  entryId: string;
  body: string;
  attributes: WireEntry['attributes'];
  groupId?: string;
  deduplicationId?: string;
}

/** An entry the service lists in `Failed`. */
export interface EntryFailure {
  Code: string;
  Message: string;
  SenderFault: boolean;
}

/** A refusal of the whole call. */
export interface CallError {
  status: number;
  /** AWS's error code, as the service sends it (SQS: in `x-amzn-query-error`; SNS: the XML's `Code`). */
  code: string;
  /** SQS: the modelled exception's shape name (`__type`), where it differs from the code. */
  type?: string;
  message: string;
  sender: boolean;
}

/**
 * Whole-call faults the test injects: throttling (400 Throttling), the service's own modelled
 * throttling (`service-throttle`: SNS 429 `Throttled`, SQS `KmsThrottled` sent as
 * `KMS.ThrottlingException`) or the service's failure (500).
 */
export type Fault = 'throttle' | 'service-throttle' | 'error' | undefined;

const ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
const INVALID_CHARACTER = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
const FIFO_ID = /^[\x21-\x7E]{1,128}$/;
const FIVE_MINUTES = 5 * 60_000;

/**
 * The rules SQS and SNS apply to a batch call, as documented: 1 to 10 entries, ids of letters,
 * digits, `-` and `_` (at most 80) distinct within the call, the size limit (body and attributes,
 * per message and for the call), message characters, at most 10 attributes with a valid type and
 * value, and on a FIFO destination a `MessageGroupId` (and no dedup id elsewhere). What is refused as a
 * whole call and what per entry follows the services' documented errors.
 */
export function checkBatch(entries: WireEntry[], destination: string, maxBytes: number, service: 'SQS' | 'SNS'): { call?: CallError; failed: Map<string, EntryFailure> } {
  const failed = new Map<string, EntryFailure>();
  const callError = (code: string, message: string): { call: CallError; failed: Map<string, EntryFailure> } => ({ call: { status: 400, code, message, sender: true }, failed });
  if (entries.length === 0) return callError('EmptyBatchRequest', 'The batch request does not contain any entries.');
  if (entries.length > 10) return callError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are 10. You have sent ${entries.length}.`);
  const ids = new Set<string>();
  let total = 0;
  for (const entry of entries) {
    if (!ENTRY_ID.test(entry.Id)) return callError('InvalidBatchEntryId', `A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.`);
    if (ids.has(entry.Id)) return callError('BatchEntryIdsNotDistinct', `Id ${entry.Id} repeated.`);
    ids.add(entry.Id);
    total += entrySize(entry);
  }
  if (total > maxBytes) return callError('BatchRequestTooLong', `Batch requests cannot be longer than ${maxBytes} bytes. You have sent ${total} bytes.`);
  const fifo = destination.endsWith('.fifo');
  for (const entry of entries) {
    const problem = entryProblem(entry, fifo, maxBytes, service);
    if (problem) failed.set(entry.Id, problem);
  }
  return { failed };
}

function entrySize(entry: WireEntry): number {
  let bytes = Buffer.byteLength(entry.body);
  for (const [name, a] of Object.entries(entry.attributes)) bytes += Buffer.byteLength(name) + Buffer.byteLength(a.DataType) + (a.BinaryValue !== undefined ? Buffer.from(a.BinaryValue, 'base64').length : Buffer.byteLength(a.StringValue ?? ''));
  return bytes;
}

function entryProblem(entry: WireEntry, fifo: boolean, maxBytes: number, service: 'SQS' | 'SNS'): EntryFailure | undefined {
  const invalid = service === 'SQS' ? 'InvalidParameterValue' : 'InvalidParameter';
  const sender = (Code: string, Message: string): EntryFailure => ({ Code, Message, SenderFault: true });
  if (entry.body === '') return sender(invalid, 'The message body must be non-empty.');
  if (INVALID_CHARACTER.test(entry.body)) return sender(service === 'SQS' ? 'InvalidMessageContents' : invalid, 'Invalid characters found in the message.');
  if (entrySize(entry) > maxBytes) return sender(invalid, `One or more parameters are invalid. Reason: Message must be shorter than ${maxBytes} bytes.`);
  const names = Object.keys(entry.attributes);
  if (names.length > 10) return sender(invalid, `Number of message attributes [${names.length}] exceeds the allowed maximum [10].`);
  for (const [name, a] of Object.entries(entry.attributes)) {
    if (!/^(String|Number|Binary)(\.[\x21-\x7E]+)?$/.test(a.DataType)) return sender(invalid, `The type of message (user) attribute '${name}' is invalid.`);
    if (a.DataType.startsWith('Number') && !/^-?\d+(\.\d+)?$/.test(a.StringValue ?? '')) return sender(invalid, `Can't cast the value of message (user) attribute '${name}' to a number.`);
    if (!a.DataType.startsWith('Binary') && !a.StringValue) return sender(invalid, `Message (user) attribute '${name}' must contain a non-empty value of message attribute type '${a.DataType}'.`);
  }
  if (fifo) {
    if (!entry.groupId || !FIFO_ID.test(entry.groupId)) return sender(service === 'SQS' ? 'MissingParameter' : invalid, 'The request must contain the parameter MessageGroupId.');
    if (entry.deduplicationId !== undefined && !FIFO_ID.test(entry.deduplicationId)) return sender(invalid, 'MessageDeduplicationId is invalid.');
  } else if (entry.deduplicationId !== undefined && service === 'SQS') {
    return sender(invalid, 'The request include parameter that is not valid for this queue type. Reason: MessageDeduplicationId is only valid for FIFO queues.');
  }
  return undefined;
}

/** What a protocol decodes of a request and how it answers. */
export interface AwsProtocol {
  /** The action and its batch (destination and entries), or `undefined` for an action it does not take. */
  parse(req: IncomingMessage, body: string): { action: string; destination: string; entries: WireEntry[] } | { action: string; error: string };
  answer(res: ServerResponse, action: string, successful: Array<{ Id: string; MessageId: string; body: string }>, failed: Array<{ Id: string } & EntryFailure>): void;
  error(res: ServerResponse, error: CallError): void;
}

/**
 * A local endpoint for a batch-sending AWS service, over real HTTP (any signature accepted), that
 * applies {@link checkBatch}, answers entry by entry, drops a FIFO duplicate (same dedup id within
 * five minutes) as the service does, and lets a test inject faults: `fault` (every call throttled or
 * failing with a 500 while set) and `failEntry` (an entry listed in `Failed` with the code given).
 */
export class AwsBatchEndpoint {
  readonly records: AwsRecord[] = [];
  /** Batch calls received (refused ones included). */
  calls = 0;
  fault: Fault;
  failEntry: ((entry: WireEntry) => EntryFailure | undefined) | undefined;
  url = '';
  private server: Server | undefined;
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly protocol: AwsProtocol,
    private readonly service: 'SQS' | 'SNS',
    private readonly maxBytes: number,
  ) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const parsed = this.protocol.parse(req, Buffer.concat(chunks).toString('utf8'));
    if ('error' in parsed) return this.protocol.error(res, { status: 400, code: 'InvalidAction', message: parsed.error, sender: true });
    this.calls++;
    if (this.fault === 'throttle') return this.protocol.error(res, { status: 400, code: 'Throttling', message: 'Rate exceeded', sender: true });
    if (this.fault === 'service-throttle') {
      const throttled: CallError =
        this.service === 'SNS'
          ? { status: 429, code: 'Throttled', message: 'Rate exceeded', sender: true }
          : { status: 400, type: 'KmsThrottled', code: 'KMS.ThrottlingException', message: 'KMS throttled the request', sender: true };
      return this.protocol.error(res, throttled);
    }
    if (this.fault === 'error') return this.protocol.error(res, { status: 500, code: 'InternalError', message: 'We encountered an internal error. Please try again.', sender: false });
    const { call, failed } = checkBatch(parsed.entries, parsed.destination, this.maxBytes, this.service);
    if (call) return this.protocol.error(res, call);
    const successful: Array<{ Id: string; MessageId: string; body: string }> = [];
    const failures: Array<{ Id: string } & EntryFailure> = [];
    const now = Date.now();
    for (const entry of parsed.entries) {
      const failure = failed.get(entry.Id) ?? this.failEntry?.(entry);
      if (failure) {
        failures.push({ Id: entry.Id, ...failure });
        continue;
      }
      successful.push({ Id: entry.Id, MessageId: randomUUID(), body: entry.body });
      const dedup = entry.deduplicationId === undefined ? undefined : `${parsed.destination}\n${entry.deduplicationId}`;
      if (dedup !== undefined && now - (this.seen.get(dedup) ?? -Infinity) < FIVE_MINUTES) continue; // accepted, not delivered again
      if (dedup !== undefined) this.seen.set(dedup, now);
      this.records.push({ destination: parsed.destination, entryId: entry.Id, body: entry.body, attributes: entry.attributes, groupId: entry.groupId, deduplicationId: entry.deduplicationId });
    }
    this.protocol.answer(res, parsed.action, successful, failures);
  }
}

export function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}
