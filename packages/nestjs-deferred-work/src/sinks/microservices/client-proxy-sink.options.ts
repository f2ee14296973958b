import type { SinkProcessorOptions } from '../../core/sink.interface';
import type { ModuleRefLike } from '../kit/app-client';

export type { ModuleRefLike } from '../kit/app-client';

/** The transports of `@nestjs/microservices` the sink knows (read from the client's class, or given). */
export type BrokerTransport = 'rmq' | 'nats' | 'redis' | 'mqtt' | 'kafka';

/**
 * The part of a `ClientProxy` (`@nestjs/microservices` 10–12) every transport uses. Typed
 * structurally, so this subpath needs nothing from `@nestjs/microservices` to load.
 */
export interface ClientProxyLike {
  connect(): Promise<unknown>;
  close(): unknown;
  emit(pattern: unknown, data: unknown): { subscribe(observer: { next?: (value: unknown) => void; error?: (error: unknown) => void; complete?: () => void }): unknown };
}

/** What a Redis PUBLISH that reached no subscriber counts as. */
export type NoSubscribersPolicy = 'fail' | 'count';

/**
 * Options of {@link ClientProxySink}. Give `clientToken` (the token you registered the client under
 * with `ClientsModule.register([{ name: clientToken, … }])`), or `client`.
 */
export interface ClientProxySinkOptions {
  /**
   * The sink's name, for routing (`routing.job`, an item's `sink`, `@AfterResponse({ sinks })`) and
   * the first argument of `job()`. Default: `clientToken` when it is a string, else `'microservices'`.
   */
  name?: string;
  /** The client to emit through (yours to close after `app.close()`, or a registered one). Default: the one `clientToken` names (one of the two is required). */
  client?: ClientProxyLike;
  /**
   * The injection token of a client registered with `ClientsModule`; found among the app's providers
   * at bootstrap (a missing one fails the bootstrap). No second connection is opened. Default: none
   * (give `client` instead).
   */
  clientToken?: string | symbol;
  /** @deprecated Not needed: the sink finds `clientToken` through the app itself. Still accepted (used to look it up when given). */
  moduleRef?: ModuleRefLike;
  /** The transport; default: read from the client's class (`ClientRMQ`, `ClientNats`, `ClientRedis`, `ClientMqtt`, `ClientKafka`). */
  transport?: BrokerTransport;
  /** NATS only. Default: `{ jetStream: false, ackTimeoutMs: 2000 }`. */
  nats?: {
    /**
     * Publish through JetStream on the client's own connection: each message is a request to the
     * stream that captures its subject, and counts as delivered only on the stream's ack (`confirmed:
     * true`); its `Nats-Msg-Id` header makes JetStream drop a duplicate inside the stream's duplicate
     * window. A stream must capture the subjects. Default `false`: core NATS (`confirmed: false`).
     */
    jetStream?: boolean;
    /** How long to wait for a JetStream ack, in ms. Default `2000`. */
    ackTimeoutMs?: number;
  };
  /** MQTT only. Default: `{ qos: 1 }`. */
  mqtt?: {
    /** QoS of every message: 1 (default) and 2 are confirmed by the broker (PUBACK / PUBCOMP); 0 is not (`confirmed: false`). */
    qos?: 0 | 1 | 2;
  };
  /** Redis only. Default: `{ noSubscribers: 'fail' }`. */
  redis?: {
    /**
     * A PUBLISH whose reply says 0 subscribers got it: `'fail'` (default) retries it (and dead-letters
     * it after `maxAttempts`), since Redis keeps nothing; `'count'` counts it as delivered anyway.
     */
    noSubscribers?: NoSubscribersPolicy;
  };
  /**
   * Also put the message's stable id into the payload under this key (object payloads only).
   * Default: `'dwMessageId'` for Redis and for MQTT below v5 (they have no message headers),
   * `false` for the others (the id travels in a property or header).
   */
  payloadIdKey?: string | false;
  /**
   * `ClientsModule` closes each client in its `onApplicationShutdown` hook, before
   * `DeferredWorkModule` drains. When `true`, the registered client's hook first awaits the drain
   * (bounded by `shutdownTimeoutMs`), then closes. Default `true`.
   */
  drainBeforeClientClose?: boolean;
}

/** What {@link ClientProxySink.describe} says of the sink's delivery. */
export interface ClientProxySinkDescription {
  name: string;
  transport: BrokerTransport | undefined;
  /** Whether an item is counted as delivered only after the broker confirmed it. */
  confirmed: boolean;
  /** What "delivered" means for this transport, in a sentence. */
  delivered: string;
  /** Where a consumer finds the message's stable id. */
  messageId: string;
}

/**
 * Dispatcher settings of a broker sink (the module's `sinkOptions[name]` wins): a write is one round
 * of confirms (a few ms locally; its pieces of 50 messages are handed over a turn of the event loop apart, their confirms awaited together); `writeTimeoutMs: 5000` leaves room for a broker that is slow to
 * confirm; `initialBackoffMs: 250`: while the broker is not connected a write fails at once without
 * sending, so the first retries need not come sooner. Retries last the dispatcher's
 * `maxRetryDurationMs` (5 minutes), one probe at a time while the broker is down: a broker restart
 * loses nothing.
 */
export const BROKER_PROCESSOR_DEFAULTS: Readonly<Partial<SinkProcessorOptions>> = Object.freeze({
  maxBatchSize: 256,
  writeTimeoutMs: 5000,
  initialBackoffMs: 250,
});

/** The header / user property that carries the stable id (NATS uses `Nats-Msg-Id`, RabbitMQ `messageId`). */
export const MESSAGE_ID_HEADER = 'dw-message-id';
