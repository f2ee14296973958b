import type { ClientProxyLike } from './client-proxy-sink.options';

/** An amqp-connection-manager ChannelWrapper (3–5), as far as the sink listens to it and reads it. */
export interface ChannelLike {
  on?: (event: 'error', listener: (error: unknown) => void) => unknown;
  /** The messages not yet handed to amqplib's channel. */
  _messages?: unknown[];
  /** Its amqplib channel, once set up (none while it reconnects). */
  _channel?: unknown;
  /** The setup in progress after a (re)connect. */
  _settingUp?: unknown;
}

/** An amqp-connection-manager `AmqpConnectionManager` (3–5), as far as the sink wraps it and reads it. */
export interface ConnectionManagerLike {
  _channels?: unknown[];
  createChannel?: (...args: unknown[]) => unknown;
  /** The amqplib `ChannelModel` of the current connection (amqplib 0.8–0.10: its socket is `connection.stream`). */
  _currentConnection?: { connection?: { stream?: unknown } } | null;
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
