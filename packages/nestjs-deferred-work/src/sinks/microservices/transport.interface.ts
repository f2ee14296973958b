import type { BrokerTransport, ClientProxyLike, NoSubscribersPolicy } from './client-proxy-sink.options';

/** One message as the sink hands it to a transport. */
export interface OutgoingMessage {
  pattern: string;
  data: unknown;
  /** The stable id: the job's `jobId`, or one derived for the item once and kept across retries. */
  id: string;
}

/**
 * Whether a message sent now would reach the broker: `up`; `unconnected` before the client's first
 * `connect()`; `down` while it reconnects (sending would park the message in the client's offline
 * buffer, to be sent later behind the dispatcher's back); `closed` for good.
 */
export type ClientState = 'up' | 'down' | 'unconnected' | 'closed';

/** What `@nestjs/microservices` offers that the sink uses at run time (its record builders), loaded once at bootstrap. */
export interface NestRecords {
  /** The package's `ClientProxy` class: a client whose `emit` is still its own is sent to without rxjs (see `emitted`). */
  ClientProxy?: { prototype: { emit?: unknown } };
  RmqRecordBuilder: new (data?: unknown) => { setOptions(options: object): { build(): unknown } };
  NatsRecordBuilder: new (data?: unknown) => { setHeaders(headers: unknown): { build(): unknown } };
  MqttRecordBuilder: new (data?: unknown) => MqttBuilder;
}

/** `MqttRecordBuilder` of `@nestjs/microservices`. */
interface MqttBuilder {
  setQoS(qos: 0 | 1 | 2): MqttBuilder;
  setProperties(properties: object): MqttBuilder;
  build(): unknown;
}

/** The NATS client package's `headers()` factory (`@nats-io/transport-node` in Nest 12, `nats` before). */
export interface NatsHeaders {
  set(key: string, value: string): void;
}

/** What a transport needs from the environment. */
export interface TransportContext {
  client: ClientProxyLike;
  records: NestRecords;
  natsHeaders?: () => NatsHeaders;
  payloadIdKey: string | false | undefined;
  jetStream: boolean;
  ackTimeoutMs: number;
  qos: 0 | 1 | 2;
  noSubscribers: NoSubscribersPolicy;
  /** Logs a warning the library's way. */
  warn(message: string): void;
}

/**
 * Messages handed to a transport's `send` at once. A client builds, serialises and writes each message
 * of a `send` synchronously (ClientProxy's `emit`, an rxjs pipeline and a socket or channel write per
 * message), so 256 at once would hold every waiting request for milliseconds.
 */
export const MESSAGES_PER_SEND = 50;

/** How one transport sends, confirms and tells its connection state. */
export interface Transport {
  readonly transport: BrokerTransport;
  /** Whether a message is counted as delivered only on the broker's confirmation. */
  readonly confirmed: boolean;
  readonly delivered: string;
  readonly messageId: string;
  state(): ClientState;
  /**
   * Most messages one `send` call is given; a larger batch is handed over in pieces, each a turn of the
   * event loop after the last (see `ClientProxySink`). Default {@link MESSAGES_PER_SEND}; Kafka: the
   * whole batch (one `sendBatch` across its topics).
   */
  readonly messagesPerSend?: number;
  /** Checks an event's data when it is deferred (after bootstrap); throws an `Error` saying what the broker's client would refuse and how to fix it. */
  validate?(data: unknown): void;
  /** Sends the messages; one promise per message, settled by the broker's confirmation (or at once where there is none). */
  send(messages: readonly OutgoingMessage[]): Array<Promise<void>>;
  /** Run once a batch's sends resolved (core NATS: a flush, so a dead connection is not taken for delivery). */
  afterBatch?(): Promise<void>;
  /** Stop watching the client (at shutdown). */
  dispose?(): void;
}
