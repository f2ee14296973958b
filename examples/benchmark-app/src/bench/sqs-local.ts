/**
 * The `sqs-local` scenario's SQS: local-aws-sqs (an SQS server in Node.js that speaks the JSON protocol
 * current SDKs use) in the runner's process, on a free port, with one queue; the runner counts the
 * messages that reached it.
 */
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Server } from 'node:http';
import * as net from 'node:net';
import { createSqsServer } from 'local-aws-sqs';

export interface LocalSqs {
  queueUrl: string;
  /** Messages in the queue (every message sent: nothing consumes them). */
  count(): Promise<number>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startLocalSqs(): Promise<LocalSqs> {
  const port = await freePort();
  const server: Server = await createSqsServer({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false } as never);
  const client = new SQSClient({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: `bench-${process.pid}` }));
  return {
    queueUrl: QueueUrl!,
    async count() {
      const out = await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
      return Number(out.Attributes?.ApproximateNumberOfMessages ?? 0);
    },
    async close() {
      client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
