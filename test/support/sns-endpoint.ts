import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AwsBatchEndpoint, type AwsProtocol, type CallError, type WireEntry } from './aws-batch-rules';

const XMLNS = 'http://sns.amazonaws.com/doc/2010-03-31/';

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The `PublishBatchRequestEntries.member.N.*` fields of a form, as entries. */
function entriesOf(form: URLSearchParams): WireEntry[] {
  const members = new Map<number, Map<string, string>>();
  for (const [key, value] of form) {
    const m = /^PublishBatchRequestEntries\.member\.(\d+)\.(.+)$/.exec(key);
    if (!m) continue;
    const n = Number(m[1]);
    if (!members.has(n)) members.set(n, new Map());
    members.get(n)!.set(m[2], value);
  }
  return [...members.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([, fields]) => {
      const attributes: WireEntry['attributes'] = {};
      for (const [key, name] of fields) {
        const a = /^MessageAttributes\.entry\.(\d+)\.Name$/.exec(key);
        if (!a) continue;
        const prefix = `MessageAttributes.entry.${a[1]}.Value.`;
        attributes[name] = { DataType: fields.get(`${prefix}DataType`) ?? '', StringValue: fields.get(`${prefix}StringValue`), BinaryValue: fields.get(`${prefix}BinaryValue`) };
      }
      return { Id: fields.get('Id') ?? '', body: fields.get('Message') ?? '', attributes, groupId: fields.get('MessageGroupId'), deduplicationId: fields.get('MessageDeduplicationId') };
    });
}

/** Amazon SNS's protocol: AWS Query (form-encoded `Action=…&Version=2010-03-31`), XML answers and errors. */
const SNS_QUERY: AwsProtocol = {
  parse(_req: IncomingMessage, text: string) {
    const form = new URLSearchParams(text);
    const action = form.get('Action') ?? '';
    if (action !== 'PublishBatch') return { action, error: `${action || 'no Action'} is not supported by this endpoint` };
    return { action, destination: form.get('TopicArn') ?? '', entries: entriesOf(form) };
  },
  answer(res: ServerResponse, _action, successful, failed) {
    const ok = successful.map((s) => `<member><Id>${xml(s.Id)}</Id><MessageId>${s.MessageId}</MessageId></member>`).join('');
    const bad = failed.map((f) => `<member><Id>${xml(f.Id)}</Id><Code>${xml(f.Code)}</Code><Message>${xml(f.Message)}</Message><SenderFault>${f.SenderFault}</SenderFault></member>`).join('');
    reply(res, 200, `<PublishBatchResponse xmlns="${XMLNS}"><PublishBatchResult><Successful>${ok}</Successful><Failed>${bad}</Failed></PublishBatchResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></PublishBatchResponse>`);
  },
  error(res: ServerResponse, error: CallError) {
    reply(res, error.status, `<ErrorResponse xmlns="${XMLNS}"><Error><Type>${error.sender ? 'Sender' : 'Receiver'}</Type><Code>${xml(error.code)}</Code><Message>${xml(error.message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`);
  },
};

function reply(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() });
  res.end(body);
}

/**
 * A local Amazon SNS endpoint speaking the protocol `@aws-sdk/client-sns` uses (AWS Query, XML
 * answers), for tests of code that uses the real client over real HTTP. Any signature is accepted. It
 * answers `PublishBatch` with SNS's rules (see `checkBatch`: 10 entries, 256 KiB, entry ids, FIFO
 * fields), keeps what it accepted in `records` (`destination`: the topic ARN), and lets a test
 * throttle it, fail it with a 500, or fail single entries (`fault`, `failEntry`).
 */
export class SnsEndpoint extends AwsBatchEndpoint {
  constructor(maxBytes = 262_144) {
    super(SNS_QUERY, 'SNS', maxBytes);
  }
}
