import type { Server } from 'node:http';
import { DeleteMessageBatchCommand, GetQueueAttributesCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSqsServer } from 'local-aws-sqs';
import { freePort } from './free-port';

/** local-aws-sqs (an SQS server in Node.js, a dev dependency) on a free port of 127.0.0.1: its URL, and how to stop it. */
export async function startLocalSqs(): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const server: Server = await createSqsServer({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false } as never);
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const COUNTS = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] as const;

/**
 * Every message of the queue, received (with all their message attributes) and deleted, in the order
 * received. An empty receive does not end it (a short poll may come back empty while messages remain:
 * SQS samples a subset of its servers): it ends when the queue itself counts no message, visible, in
 * flight or delayed, polling again every 50 ms until then. Fails after `timeoutMs` (default 60000)
 * saying how many it had read.
 */
export async function receiveAll(client: SQSClient, queueUrl: string, timeoutMs = 60_000): Promise<Message[]> {
  const read: Message[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], WaitTimeSeconds: 0 }));
    const messages = out.Messages ?? [];
    if (messages.length > 0) {
      read.push(...messages);
      await client.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
      continue;
    }
    const { Attributes: counts = {} } = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...COUNTS] }));
    if (COUNTS.every((name) => Number(counts[name] ?? 0) === 0)) return read;
    if (Date.now() > deadline) throw new Error(`receiveAll: ${read.length} message(s) read from ${queueUrl}, and the queue still counts ${JSON.stringify(counts)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
