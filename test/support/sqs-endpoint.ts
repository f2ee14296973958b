import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AwsBatchEndpoint, type AwsProtocol, type CallError, md5, type WireEntry } from './aws-batch-rules';

type JsonEntry = { Id?: string; MessageBody?: string; MessageAttributes?: WireEntry['attributes']; MessageGroupId?: string; MessageDeduplicationId?: string };

const toEntry = (e: JsonEntry, id = e.Id ?? ''): WireEntry => ({
  Id: id,
  body: e.MessageBody ?? '',
  attributes: e.MessageAttributes ?? {},
  groupId: e.MessageGroupId,
  deduplicationId: e.MessageDeduplicationId,
});

/** Amazon SQS's protocol as current SDKs speak it: AWS JSON 1.0, `X-Amz-Target: AmazonSQS.<Action>`, errors as `__type` plus `x-amzn-query-error`. */
const SQS_JSON: AwsProtocol = {
  parse(req: IncomingMessage, text: string) {
    const action = String(req.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(text || '{}') as Record<string, unknown>;
    } catch {
      return { action, error: 'body is not JSON' };
    }
    const destination = String(input.QueueUrl ?? '');
    if (action === 'SendMessage') return { action, destination, entries: [toEntry(input as JsonEntry, 'single')] };
    if (action === 'SendMessageBatch') return { action, destination, entries: ((input.Entries ?? []) as JsonEntry[]).map((e) => toEntry(e)) };
    return { action, error: `${action} is not supported by this endpoint` };
  },
  answer(res: ServerResponse, action, successful, failed) {
    if (action === 'SendMessage') {
      if (failed.length > 0) return SQS_JSON.error(res, { status: 400, code: failed[0].Code, message: failed[0].Message, sender: true });
      return reply(res, 200, { MessageId: successful[0].MessageId, MD5OfMessageBody: md5(successful[0].body) });
    }
    reply(res, 200, { Successful: successful.map((s) => ({ Id: s.Id, MessageId: s.MessageId, MD5OfMessageBody: md5(s.body) })), Failed: failed });
  },
  error(res: ServerResponse, error: CallError) {
    reply(res, error.status, { __type: `com.amazonaws.sqs#${error.type ?? error.code}`, message: error.message }, `${error.code};${error.sender ? 'Sender' : 'Receiver'}`);
  },
};

function reply(res: ServerResponse, status: number, body: unknown, queryError?: string): void {
  const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() };
  if (queryError) headers['x-amzn-query-error'] = queryError;
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}

/**
 * A local Amazon SQS endpoint speaking the protocol current AWS SDKs use (AWS JSON 1.0), for tests of
 * code that uses the real `@aws-sdk/client-sqs` over real HTTP, and for what a local SQS server cannot
 * do: throttle, fail with a 500, or fail single entries of a batch (`fault`, `failEntry`). Any
 * signature is accepted. It answers `SendMessage` and `SendMessageBatch` with SQS's rules (see
 * `checkBatch`: 10 entries, 1 MiB, entry ids, FIFO fields) and each body's MD5 (which the SDK checks),
 * and keeps what it accepted in `records` (`destination`: the queue URL).
 */
export class SqsEndpoint extends AwsBatchEndpoint {
  constructor(maxBytes = 1_048_576) {
    super(SQS_JSON, 'SQS', maxBytes);
  }
}
