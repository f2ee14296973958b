import { closingQueues, connected, definedOnly, reportQueueErrors, type SinkHostContext } from '../queue/owned-queues';
import type { BullOffloadOptions } from './bull.offload';
import { BullSink } from './bull.sink';
import type { BullQueueLike } from './bull-sink.options';

type BullQueue = BullQueueLike & { close(): Promise<void>; on(event: 'error', fn: (error: Error) => void): unknown; readonly client: { status: string; once(event: 'ready', listener: () => void): void } };

/** Bull 4's `isReady()` resolves before its client is connected: wait for the client itself. */
function clientReady(queue: BullQueue): Promise<void> {
  const client = queue.client;
  return client.status === 'ready' ? Promise.resolve() : new Promise((resolve) => client.once('ready', resolve));
}
type BullQueueClass = new (name: string, url: string | object, options?: object) => BullQueue;

/** In the sink host's worker thread: the Bull queues of `BullSink.offloaded()`, and a `BullSink` that closes them at shutdown. */
export async function bullWorkerSink(options: BullOffloadOptions, host?: SinkHostContext): Promise<BullSink> {
  const mod = (await import('bull')) as unknown as { default?: BullQueueClass } & BullQueueClass;
  const Queue = mod.default ?? mod;
  const queueOptions = definedOnly({ prefix: options.prefix, defaultJobOptions: options.defaultJobOptions });
  const queues = options.queues.map((name) =>
    typeof options.redis === 'string' ? new Queue(name, options.redis, queueOptions) : new Queue(name, { ...queueOptions, redis: options.redis }),
  );
  if (host) reportQueueErrors(queues, host.warn);
  await connected(queues.map(clientReady));
  return closingQueues(new BullSink({ name: options.name, queues, drainBeforeQueueClose: false, packJobs: options.packJobs }), queues);
}
