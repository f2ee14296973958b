import { missingPackage, missingPackageError, settledNow } from '../kit/missing-package';
import type { SinkConfigError } from '../kit/sink-config.error';
import type { BullMqQueueLike } from './bullmq-sink.options';

/** What the sink reads of a BullMQ queue to find its Redis client: `backend.client` (BullMQ 6) or `client` (BullMQ 5). */
interface ClientHolder {
  backend?: { client?: Promise<{ status?: string; stream?: unknown }> };
  client?: Promise<{ status?: string; stream?: unknown }>;
}

/**
 * The queue's client promise (`backend.client` or `client`), or `undefined` when there is none to read.
 * BullMQ resolves it once the client is connected and rejects it when the client could not be made.
 */
export function pendingClient(queue: BullMqQueueLike): Promise<{ status?: string; stream?: unknown }> | undefined {
  try {
    const holder = queue as BullMqQueueLike & ClientHolder;
    return holder.backend?.client ?? holder.client;
  } catch {
    return undefined;
  }
}

/**
 * At bootstrap: the error for the first of `queues` whose client BullMQ could not make because a
 * package is not installed, or `undefined`.
 *
 * BullMQ 6 loads `ioredis` only when a queue given connection options creates its client, as the
 * queue is constructed: without the package the queue is built anyway, its client promise rejected
 * ("BullMQ could not load the optional 'ioredis' package"), every add rejected, and its `close()`
 * throws. (BullMQ 5 and Bull 4 import `ioredis` as a dependency: without it their own import fails,
 * before any queue exists.) A queue still connecting — Redis down at boot — is `pending` here, and
 * passes: the sink sends once it connects.
 */
export async function missingClientPackage(sink: string, queues: readonly BullMqQueueLike[]): Promise<SinkConfigError | undefined> {
  const outcomes = await Promise.all(
    queues.map(async (queue) => {
      const pending = pendingClient(queue);
      return { queue, settled: pending ? await settledNow(pending) : undefined };
    }),
  );
  for (const { queue, settled } of outcomes) {
    const packageName = settled?.state === 'rejected' ? missingPackage(settled.reason) : undefined;
    if (!packageName) continue;
    return missingPackageError({
      sink,
      packageName,
      neededBy: `BullMQ loads it to connect queue "${queue.name}"${packageName === 'ioredis' ? ' to Redis (BullMQ 6 made ioredis an optional peer dependency)' : ''}`,
      consequence: 'the queue can never connect and no job would be added',
      otherwise: packageName === 'ioredis' ? 'give BullMQ a client of another Redis driver (a node-redis instance) as its connection' : undefined,
    });
  }
  return undefined;
}
