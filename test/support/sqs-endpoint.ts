import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One message the endpoint accepted. */
export interface SqsRecord {
  queueUrl: string;
  id: string;
  body: string;
  attributes?: Record<string, unknown>;
}

/**
 * A local Amazon SQS endpoint speaking the protocol current AWS SDKs use (AWS JSON 1.0:
 * `X-Amz-Target: AmazonSQS.<Action>`), for tests of code that uses the real `@aws-sdk/client-sqs`
 * over real HTTP. Any signature is accepted. It answers `SendMessage` and `SendMessageBatch` (with
 * each body's MD5, which the SDK checks), and keeps what it accepted in `records`.
 */
export class SqsEndpoint {
  readonly records: SqsRecord[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
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
    const action = String(req.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      return this.reply(res, 400, { __type: 'com.amazonaws.sqs#InvalidRequest', message: 'body is not JSON' });
    }
    const queueUrl = String(input.QueueUrl ?? '');
    if (action === 'SendMessage') {
      const body = String(input.MessageBody ?? '');
      this.records.push({ queueUrl, id: randomUUID(), body, attributes: input.MessageAttributes as Record<string, unknown> | undefined });
      return this.reply(res, 200, { MessageId: randomUUID(), MD5OfMessageBody: md5(body) });
    }
    if (action === 'SendMessageBatch') {
      const entries = (input.Entries ?? []) as Array<{ Id: string; MessageBody: string; MessageAttributes?: Record<string, unknown> }>;
      const successful = entries.map((entry) => {
        this.records.push({ queueUrl, id: entry.Id, body: entry.MessageBody, attributes: entry.MessageAttributes });
        return { Id: entry.Id, MessageId: randomUUID(), MD5OfMessageBody: md5(entry.MessageBody) };
      });
      return this.reply(res, 200, { Successful: successful, Failed: [] });
    }
    this.reply(res, 400, { __type: 'com.amazonaws.sqs#UnsupportedOperation', message: `${action} is not supported by this endpoint` });
  }

  private reply(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() });
    res.end(JSON.stringify(body));
  }
}

function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}
