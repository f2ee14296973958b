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

/**
 * The client the sink writes through: the app's (found by token, or given), or one the sink opens from
 * a URL or connection options (`own`: the sink closes it at shutdown).
 */
export async function findStreamRedis(context: SinkAttachContext, client: unknown, label: string): Promise<{ redis: StreamRedis; own: boolean }> {
  if (isStreamRedis(client)) return { redis: client, own: false };
  const connection = ownConnection(client);
  if (connection === undefined) {
    const redis = findAppClient(context, {
      sink: label,
      option: 'client',
      token: client,
      is: isStreamRedis,
      what: 'an ioredis client',
      register: "a provider { provide: 'REDIS', useFactory: () => new Redis(…) }",
    });
    return { redis, own: false };
  }
  const { Redis } = await loadIoredis(label);
  return { redis: new Redis(connection), own: true };
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
