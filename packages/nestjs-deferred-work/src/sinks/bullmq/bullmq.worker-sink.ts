import { closingQueues, connected, definedOnly, reportQueueErrors, type SinkHostContext } from '../queue/owned-queues';
import type { BullMqOffloadOptions } from './bullmq.offload';
import { BullMqSink } from './bullmq.sink';
import type { BullMqQueueLike } from './bullmq-sink.options';

type BullMqQueue = BullMqQueueLike & { close(): Promise<void>; on(event: 'error', fn: (error: Error) => void): unknown };
type BullMqQueueClass = new (name: string, options: object) => BullMqQueue;

/** ioredis options from a `redis://` / `rediss://` URL (host, port, credentials, database, TLS). */
export function connectionFromUrl(url: string): Record<string, unknown> {
  const parsed = new URL(url);
  const db = parsed.pathname.replace(/^\//, '');
  return definedOnly({
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || undefined, // [::1] → ::1
    port: parsed.port ? Number(parsed.port) : undefined,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: db ? Number(db) : undefined,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
  });
}

/** In the sink host's worker thread: the BullMQ queues of `BullMqSink.offloaded()`, and a `BullMqSink` that closes them at shutdown. */
export async function bullMqWorkerSink(options: BullMqOffloadOptions, host?: SinkHostContext): Promise<BullMqSink> {
  const { Queue } = (await import('bullmq')) as unknown as { Queue: BullMqQueueClass };
  const connection = typeof options.connection === 'string' ? connectionFromUrl(options.connection) : options.connection;
  const queueOptions = definedOnly({ connection, prefix: options.prefix, defaultJobOptions: options.defaultJobOptions });
  const queues = options.queues.map((name) => new Queue(name, queueOptions));
  if (host) reportQueueErrors(queues, host.warn);
  await connected(queues.map((queue) => queue.waitUntilReady()));
  return closingQueues(new BullMqSink({ name: options.name, queues, drainBeforeQueueClose: false, packJobs: options.packJobs }), queues);
}
