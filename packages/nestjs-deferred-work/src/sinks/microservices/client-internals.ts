import type { ClientProxyLike } from './client-proxy-sink.options';

/** An amqp-connection-manager ChannelWrapper, as far as the sink listens to it. */
export interface ChannelLike {
  on?: (event: 'error', listener: (error: unknown) => void) => unknown;
}

/** An amqp-connection-manager `AmqpConnectionManager`, as far as the sink wraps it. */
export interface ConnectionManagerLike {
  _channels?: unknown[];
  createChannel?: (...args: unknown[]) => unknown;
}

/** What the sink reads of a client's internals, per transport (fields of `@nestjs/microservices` 10–12). */
export interface Internals {
  client?: (ConnectionManagerLike & { isConnected?: () => boolean }) | null; // ClientRMQ: the amqp-connection-manager
  channel?: ChannelLike | null; // ClientRMQ: its ChannelWrapper
  natsClient?: NatsConnectionLike | null;
  pubClient?: RedisLike | null;
  mqttClient?: { connected?: boolean; disconnecting?: boolean; options?: { protocolVersion?: number } } | null;
  _producer?: unknown;
  /** Nest 10's name for it. */
  producer?: unknown;
  /** Nest's serializer: may answer a promise (Nest awaits it). */
  serializer?: { serialize(packet: unknown, options?: { pattern?: unknown }): unknown };
  normalizePattern?: (pattern: unknown) => string;
  status?: { subscribe(next: (status: string) => void): { unsubscribe(): void } };
  emitBatch?: (pattern: string, data: { messages: unknown[] }) => ReturnType<ClientProxyLike['emit']>;
}

interface NatsConnectionLike {
  isClosed?(): boolean;
  flush(): Promise<void>;
  request(subject: string, payload: unknown, options: { timeout: number; headers?: unknown }): Promise<{ data: Uint8Array; json?<T>(): T }>;
}

interface RedisLike {
  status?: string;
  pipeline(): { publish(channel: string, message: string): unknown; exec(): Promise<Array<[Error | null, unknown]> | null> };
}

export const internals = (client: ClientProxyLike) => client as unknown as Internals;
