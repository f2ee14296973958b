import type { SinkAttachContext } from '../../core/sink.interface';
import { findAppClient } from '../kit/app-client';
import { SinkConfigError } from '../kit/sink-config.error';

/** What the sink uses of an ioredis `Redis`. */
export interface StreamRedis {
  status?: string;
  /** The client's socket (corked while a piece of a write is issued). */
  stream?: unknown;
  pipeline(): { xadd(...args: Array<string | readonly string[]>): unknown; exec(): Promise<Array<[Error | null, unknown]> | null> };
  /** ioredis flattens array arguments one level: `xadd(stream, head, fields)` is one `XADD`. */
  xadd(...args: Array<string | readonly string[]>): Promise<unknown>;
  /** Any command by name (`call('XADD', …)`), flattening array arguments one level as `xadd` does. */
  call?(command: string, ...args: Array<string | readonly string[]>): Promise<unknown>;
  quit(): Promise<unknown>;
  /** Connects a client created with `lazyConnect` (status `wait`). */
  connect?(): Promise<unknown>;
}

/** Whether a value is an ioredis client (it pipelines and has XADD). */
export function isStreamRedis(value: unknown): value is StreamRedis {
  const v = value as Partial<StreamRedis> | null;
  return typeof value === 'object' && value !== null && typeof v!.pipeline === 'function' && typeof v!.xadd === 'function';
}

/** Whether `client` asks the sink for a connection of its own: a `redis://` / `rediss://` URL, or connection options. */
function ownConnection(client: unknown): string | Record<string, unknown> | undefined {
  if (typeof client === 'string' && /^rediss?:\/\//i.test(client)) return client;
  if (typeof client === 'object' && client !== null && !isStreamRedis(client) && Object.getPrototypeOf(client) === Object.prototype) return client as Record<string, unknown>;
  return undefined;
}

/** What the sink uses of a Bull 4 queue (`client`: its ioredis connection) or a BullMQ queue (`waitUntilReady()`: its connection, once ready). */
interface QueueWithRedis {
  name?: unknown;
  add(...args: unknown[]): unknown;
  client?: unknown;
  isReady?: (...args: unknown[]) => unknown;
  waitUntilReady?: () => Promise<unknown>;
  /** BullMQ 6: the queue's backend, which holds its connection's client. */
  getBackend?: () => unknown;
}

/**
 * Whether a value is a Bull 4 queue (it adds jobs, has `isReady()` and a `client`) or a BullMQ queue
 * (it adds jobs and has `waitUntilReady()`). Bull creates its connection when `client` is first read:
 * this only asks whether the queue has one.
 */
export function isQueueWithRedis(value: unknown): value is QueueWithRedis {
  if (typeof value !== 'object' || value === null) return false;
  const q = value as Partial<QueueWithRedis>;
  return typeof q.add === 'function' && (typeof q.waitUntilReady === 'function' || (typeof q.isReady === 'function' && 'client' in q));
}

/**
 * Whether the client is BullMQ's ioredis adapter (BullMQ 6.x): a proxy of the queue's ioredis client
 * whose `xadd` takes BullMQ's own argument shape; every other ioredis method passes through. The sink
 * sends its `XADD`s with `call('XADD', …)` through it.
 */
export function isBullMqAdapter(client: unknown): boolean {
  return (client as { __bullmq_iredis?: unknown } | null)?.__bullmq_iredis === true;
}

/**
 * Whether a client a BullMQ queue handed out is ioredis: BullMQ 6's ioredis adapter, or (BullMQ 5)
 * ioredis itself. BullMQ 6's adapters of node-redis, Bun's and valkey-glide's clients also have
 * `pipeline`, `xadd` and `defineCommand` (with BullMQ's own argument shapes) — and `runCommand`, which
 * ioredis has not.
 */
function isIoredisBehindBullMq(client: unknown): boolean {
  if (!isStreamRedis(client)) return false;
  if (isBullMqAdapter(client)) return true;
  const c = client as { runCommand?: unknown; call?: unknown; defineCommand?: unknown };
  return c.runCommand === undefined && typeof c.call === 'function' && typeof c.defineCommand === 'function';
}

/** The client the sink writes through, and what it holds open through the drain. */
export interface FoundStreamRedis {
  /** The client, when it is there at once (the app's own, one the sink opened, a Bull queue's). */
  redis?: StreamRedis;
  /** A BullMQ queue's client: once the queue's connection is ready (BullMQ connects it then checks the server). */
  ready?: Promise<StreamRedis>;
  /** Whether the sink opened the connection itself (it closes it at shutdown). */
  own: boolean;
  /** The queue whose connection the sink writes through (held open through the drain, as its client is). */
  queue?: object;
}

/**
 * The client the sink writes through: the app's (found by token, or given), a Bull or BullMQ queue's
 * connection (the queue found by token, or given), or one the sink opens from a URL or connection
 * options (`own`: the sink closes it at shutdown).
 */
export async function findStreamRedis(context: SinkAttachContext, client: unknown, label: string): Promise<FoundStreamRedis> {
  if (isStreamRedis(client)) return { redis: client, own: false };
  if (isQueueWithRedis(client)) return queueRedis(client, label);
  const connection = ownConnection(client);
  if (connection === undefined) {
    const found = findAppClient<StreamRedis | QueueWithRedis>(context, {
      sink: label,
      option: 'client',
      token: client,
      is: (value): value is StreamRedis | QueueWithRedis => isStreamRedis(value) || isQueueWithRedis(value),
      what: 'an ioredis client or a Bull/BullMQ queue',
      register: "a provider { provide: 'REDIS', useFactory: () => new Redis(…) } (or BullModule.registerQueue, with client: getQueueToken(name))",
    });
    return isStreamRedis(found) ? { redis: found, own: false } : queueRedis(found, label);
  }
  const { Redis } = await loadIoredis(label);
  return { redis: new Redis(connection), own: true };
}

/**
 * A BullMQ queue's client, once its connection is ready: BullMQ 6 keeps it on the queue's backend
 * (`getBackend().client`), BullMQ 5 on the queue (`client`); both are promises of the client.
 */
async function bullMqClient(queue: QueueWithRedis): Promise<unknown> {
  const backend = typeof queue.getBackend === 'function' ? (queue.getBackend() as { client?: unknown } | undefined) : undefined;
  if (backend && 'client' in backend) return backend.client;
  return 'client' in queue ? queue.client : queue.waitUntilReady!();
}

/** A queue's connection: Bull's `client` at once; BullMQ's once the queue is ready (never awaited here: Redis may be down at bootstrap). */
function queueRedis(queue: QueueWithRedis, label: string): FoundStreamRedis {
  const name = typeof queue.name === 'string' ? `"${queue.name}"` : '(unnamed)';
  const notIoredis = () =>
    new SinkConfigError(
      `${label}: the connection of queue ${name} is not an ioredis client; the sink writes through ioredis. ` +
        "Give the queue an ioredis connection, or give the sink its own client (client: 'REDIS' or a redis:// URL).",
      'client',
    );
  if (typeof queue.waitUntilReady !== 'function') {
    const redis = queue.client;
    if (!isStreamRedis(redis)) throw notIoredis();
    return { redis, own: false, queue };
  }
  const ready = bullMqClient(queue).then((redis) => {
    if (!isIoredisBehindBullMq(redis)) throw notIoredis();
    return redis as StreamRedis;
  });
  ready.catch(() => undefined); // read by the writes (each fails, saying why)
  return { ready, own: false, queue };
}

/** What the sink uses of the `ioredis` package: `Redis` (a connection of its own), `Command` (a key's hash slot). */
interface Ioredis {
  Redis: new (arg: unknown) => StreamRedis;
  Command: new (name: string, args: string[], options?: { keyPrefix?: string }) => { getSlot(): number | null };
}

/** Loads `ioredis` (an optional peer), or fails the bootstrap saying how to install it. */
export async function loadIoredis(label: string): Promise<Ioredis> {
  try {
    return (await import('ioredis')) as unknown as Ioredis;
  } catch (error) {
    throw new SinkConfigError(`${label}: the "ioredis" package is not installed (${(error as Error)?.message ?? String(error)}). Install it: npm install ioredis`, 'client');
  }
}
