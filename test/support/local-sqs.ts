import type { Server } from 'node:http';
import { createSqsServer } from 'local-aws-sqs';
import { freePort } from './free-port';

/** local-aws-sqs (an SQS server in Node.js, a dev dependency) on a free port of 127.0.0.1: its URL, and how to stop it. */
export async function startLocalSqs(): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const server: Server = await createSqsServer({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false } as never);
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
