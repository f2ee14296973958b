import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { redisReply } from '../kit/redis-errors';
import { redisState } from '../kit/redis-state';
import { type BrokerTransport, type ClientProxyLike, MESSAGE_ID_HEADER, type NoSubscribersPolicy } from './client-proxy-sink.options';

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

/** How one transport sends, confirms and tells its connection state. */
export interface Transport {
  readonly transport: BrokerTransport;
  /** Whether a message is counted as delivered only on the broker's confirmation. */
  readonly confirmed: boolean;
  readonly delivered: string;
  readonly messageId: string;
  state(): ClientState;
  /** Sends the messages; one promise per message, settled by the broker's confirmation (or at once where there is none). */
  send(messages: readonly OutgoingMessage[]): Array<Promise<void>>;
  /** Run once a batch's sends resolved (core NATS: a flush, so a dead connection is not taken for delivery). */
  afterBatch?(): Promise<void>;
  /** Stop watching the client (at shutdown). */
  dispose?(): void;
}

/** The transport of a client, from its class (walking up, for subclasses). */
export function detectTransport(client: unknown): BrokerTransport | undefined {
  const names: Record<string, BrokerTransport> = { ClientRMQ: 'rmq', ClientNats: 'nats', ClientRedis: 'redis', ClientMqtt: 'mqtt', ClientKafka: 'kafka' };
  for (let proto = Object.getPrototypeOf(client ?? {}); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    const found = names[(proto.constructor as { name?: string } | undefined)?.name ?? ''];
    if (found) return found;
  }
  return undefined;
}

/** Resolves when the client's `emit` observable completes; rejects on its error. */
function emitted(client: ClientProxyLike, pattern: string, data: unknown): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    try {
      client.emit(pattern, data).subscribe({ error: reject, complete: () => resolve() });
    } catch (error) {
      reject(error);
    }
  });
}

/** `data` with the id under `key`, when `data` is a plain object and a key is set. */
function withPayloadId(data: unknown, key: string | false | undefined, id: string): unknown {
  if (!key || data === null || typeof data !== 'object' || Array.isArray(data) || Buffer.isBuffer(data)) return data;
  return { ...(data as object), [key]: id };
}

/**
 * A NATS publish the client refuses for this message alone, whatever the connection: over the server's
 * `max_payload` (the limit its INFO announced; the server would end the connection over it). Sent
 * again, it is refused again: not retryable. `undefined` for any other error.
 */
export function natsRefusal(error: unknown): SinkWriteError | undefined {
  const text = errorMessage(error);
  if (!/max_payload/i.test(text) && (error as { code?: unknown } | null)?.code !== 'MAX_PAYLOAD_EXCEEDED') return undefined;
  return new SinkWriteError(`NATS: the message is over the server's max_payload (${text}); it is never sent. Make the payload smaller.`, {
    retryable: false,
    code: 'MAX_PAYLOAD_EXCEEDED',
    cause: error,
  });
}

/** A JetStream publish ack's error: a 4xx (but 408, 429) refuses the message itself (too large for the stream, …); anything else may pass later. */
export function jetStreamAckError(subject: string, error: { code?: number; err_code?: number; description?: string } | undefined): SinkWriteError {
  const status = error?.code;
  const permanent = typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429;
  return new SinkWriteError(
    `NATS JetStream refused the message for "${subject}": ${error?.description ?? 'no sequence in the ack'} (${status ?? '?'}${error?.err_code === undefined ? '' : `, err_code ${error.err_code}`})`,
    { retryable: !permanent, code: error?.err_code ?? status },
  );
}

/**
 * MQTT 5 reason codes of a PUBACK / PUBREC that refuse the message itself: sent again, it gets the
 * same answer. The others (0x80 unspecified, 0x83 implementation specific, 0x91 packet id in use,
 * 0x97 quota exceeded) may pass later.
 */
const MQTT_REFUSALS: ReadonlyMap<number, string> = new Map([
  [0x87, 'not authorized to publish to this topic'],
  [0x90, 'the topic name is invalid'],
  [0x95, 'the packet is too large for the broker'],
  [0x99, 'the payload format is invalid'],
]);

/** A broker's refusal of one MQTT message for good (its PUBACK / PUBREC reason code, carried by mqtt.js's error), else `undefined`. */
export function mqttRefusal(error: unknown): SinkWriteError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const why = typeof code === 'number' ? MQTT_REFUSALS.get(code) : undefined;
  if (why === undefined) return undefined;
  return new SinkWriteError(`MQTT: the broker refused the message (reason code 0x${(code as number).toString(16)}: ${why}): ${errorMessage(error)}`, {
    retryable: false,
    code: `0x${(code as number).toString(16)}`,
    cause: error,
  });
}

/** `promise`, with a rejection that `classify` recognises replaced by what it returns. */
function refusing(promise: Promise<void>, classify: (error: unknown) => SinkWriteError | undefined): Promise<void> {
  return promise.catch((error: unknown) => {
    throw classify(error) ?? error;
  });
}

/** An amqp-connection-manager ChannelWrapper, as far as the sink listens to it. */
interface ChannelLike {
  on?: (event: 'error', listener: (error: unknown) => void) => unknown;
}

/** An amqp-connection-manager `AmqpConnectionManager`, as far as the sink wraps it. */
interface ConnectionManagerLike {
  _channels?: unknown[];
  createChannel?: (...args: unknown[]) => unknown;
}

/** What the sink reads of a client's internals, per transport (fields of `@nestjs/microservices` 10–12). */
interface Internals {
  client?: (ConnectionManagerLike & { isConnected?: () => boolean }) | null; // ClientRMQ: the amqp-connection-manager
  channel?: ChannelLike | null; // ClientRMQ: its ChannelWrapper
  natsClient?: NatsConnectionLike | null;
  pubClient?: RedisLike | null;
  mqttClient?: { connected?: boolean; disconnecting?: boolean; options?: { protocolVersion?: number } } | null;
  _producer?: unknown;
  serializer?: { serialize(packet: unknown): unknown };
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

const internals = (client: ClientProxyLike) => client as unknown as Internals;

/** Makes `target[method]` (when it is a function) hand what each call returns to `then`, then return it. */
function afterEachCall(target: object, method: string, then: (result: unknown) => void): void {
  const owner = target as Record<string, unknown>;
  const original = owner[method];
  if (typeof original !== 'function') return;
  owner[method] = function (this: unknown, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    then(result);
    return result;
  };
}

/** `ClientRMQ`: `emit` resolves on the publisher confirm of amqp-connection-manager's confirm channel. */
function rmq(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  const guarded = new WeakSet<object>();
  /**
   * ClientRMQ adds no 'error' listener to the ChannelWrappers it makes, and a ChannelWrapper emits
   * 'error' when the connection drops while it is being set up: unheard, that event is an unhandled
   * rejection, which ends the process. So each one gets a listener the moment it is made — through
   * the connection manager's `createChannel`, and ClientRMQ's `createClient` for the managers it makes
   * after a reconnect — besides those made before the sink saw the client (Nest 12's first connect
   * makes two). A channel's setup cannot fail before the call that made it returns: it awaits the broker.
   */
  const guardChannel = (channel: ChannelLike | null | undefined) => {
    if (!channel || typeof channel.on !== 'function' || guarded.has(channel)) return;
    guarded.add(channel);
    channel.on('error', (error) => ctx.warn(`RabbitMQ channel error (the client reconnects): ${errorMessage(error)}`));
  };
  const guardManager = (manager: ConnectionManagerLike | null | undefined) => {
    if (!manager || guarded.has(manager)) return;
    guarded.add(manager);
    for (const channel of Array.isArray(manager._channels) ? manager._channels : []) guardChannel(channel as ChannelLike);
    afterEachCall(manager, 'createChannel', (channel) => guardChannel(channel as ChannelLike));
  };
  afterEachCall(ctx.client as object, 'createClient', (manager) => guardManager(manager as ConnectionManagerLike));
  const guard = () => {
    guardManager(c.client);
    guardChannel(c.channel);
  };
  return {
    transport: 'rmq',
    confirmed: true,
    delivered: 'RabbitMQ confirmed it (publisher confirm on the client\'s confirm channel): the queue or exchange has it',
    messageId: 'the AMQP messageId property (context.getMessage().properties.messageId)',
    state() {
      guard();
      if (!c.client) return 'unconnected';
      return c.client.isConnected?.() === false ? 'down' : 'up';
    },
    send(messages) {
      return messages.map((m) =>
        emitted(ctx.client, m.pattern, new ctx.records.RmqRecordBuilder(withPayloadId(m.data, ctx.payloadIdKey, m.id)).setOptions({ messageId: m.id }).build()),
      );
    },
  };
}

/** `ClientNats`: core NATS (`emit`, then one flush per batch; not confirmed) or JetStream on the same connection (acked). */
function nats(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  let status = 'connected';
  const watch = c.status?.subscribe((next) => (status = next));
  const headers = (id: string) => {
    if (!ctx.natsHeaders) throw new SinkWriteError('NATS: the NATS client package (@nats-io/transport-node or nats) could not be loaded for headers', { retryable: false });
    const h = ctx.natsHeaders();
    h.set('Nats-Msg-Id', id);
    return h;
  };
  const base = {
    transport: 'nats' as const,
    messageId: 'the Nats-Msg-Id header (context.getHeaders().get(\'Nats-Msg-Id\'))',
    state(): ClientState {
      const nc = c.natsClient;
      if (!nc) return 'unconnected';
      if (nc.isClosed?.()) return 'closed';
      return status === 'connected' ? 'up' : 'down';
    },
    dispose: () => watch?.unsubscribe(),
  };
  if (!ctx.jetStream) {
    return {
      ...base,
      confirmed: false,
      delivered: 'core NATS: the server received it (one flush per batch) — not stored, and not confirmed to have reached a subscriber',
      send(messages) {
        return messages.map((m) =>
          refusing(emitted(ctx.client, m.pattern, new ctx.records.NatsRecordBuilder(withPayloadId(m.data, ctx.payloadIdKey, m.id)).setHeaders(headers(m.id)).build()), natsRefusal),
        );
      },
      async afterBatch() {
        await c.natsClient?.flush();
      },
    };
  }
  const decoder = new TextDecoder();
  return {
    ...base,
    confirmed: true,
    delivered: 'JetStream acked it: the stream capturing the subject stored it (a duplicate Nats-Msg-Id inside the duplicate window is dropped by the stream)',
    send(messages) {
      return messages.map(async (m) => {
        const nc = c.natsClient;
        if (!nc) throw new SinkWriteError('NATS: not connected; not sending');
        const subject = c.normalizePattern ? c.normalizePattern(m.pattern) : m.pattern;
        const record = new ctx.records.NatsRecordBuilder(withPayloadId(m.data, ctx.payloadIdKey, m.id)).setHeaders(headers(m.id)).build();
        const packet = (c.serializer?.serialize({ pattern: m.pattern, data: record }) ?? { data: JSON.stringify({ pattern: m.pattern, data: m.data }) }) as {
          data: unknown;
          headers?: unknown;
        };
        let reply: { data: Uint8Array };
        try {
          reply = await nc.request(subject, packet.data, { timeout: ctx.ackTimeoutMs, headers: packet.headers });
        } catch (error) {
          const refused = natsRefusal(error);
          if (refused) throw refused;
          const text = errorMessage(error);
          const hint = /no responders|503/i.test(text) ? ` — no JetStream stream captures "${subject}"; add the subject to a stream` : '';
          throw new SinkWriteError(`NATS JetStream publish to "${subject}" failed: ${text}${hint}`, { cause: error });
        }
        const ack = JSON.parse(decoder.decode(reply.data)) as { stream?: string; seq?: number; error?: { code?: number; err_code?: number; description?: string } };
        if (ack.error || typeof ack.seq !== 'number') throw jetStreamAckError(subject, ack.error);
      });
    },
  };
}

/** `ClientRedis`: PUBLISH in one pipeline per batch on the client's publisher connection; each reply is the number of subscribers that got it. */
function redis(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  const pub = () => c.pubClient;
  return {
    transport: 'redis',
    confirmed: ctx.noSubscribers === 'fail',
    delivered:
      ctx.noSubscribers === 'fail'
        ? 'Redis replied to the PUBLISH that at least one subscriber got it (Redis keeps nothing: 0 subscribers fails and is retried)'
        : 'Redis replied to the PUBLISH, whatever the number of subscribers (0 means nobody got it, and it is counted anyway: noSubscribers "count")',
    messageId: `the payload's "${ctx.payloadIdKey || '(none: set payloadIdKey)'}" field (object payloads only)`,
    state() {
      const client = pub();
      return client ? redisState(client) : 'unconnected';
    },
    send(messages) {
      const client = pub();
      if (!client) return messages.map(() => Promise.reject(new SinkWriteError('Redis: not connected; not sending')));
      const pipeline = client.pipeline();
      const channels = messages.map((m) => {
        const channel = c.normalizePattern ? c.normalizePattern(m.pattern) : m.pattern;
        const packet = { pattern: m.pattern, data: withPayloadId(m.data, ctx.payloadIdKey, m.id) };
        pipeline.publish(channel, JSON.stringify(c.serializer ? c.serializer.serialize(packet) : packet));
        return channel;
      });
      const replies = pipeline.exec();
      return messages.map(async (m, i) => {
        const [error, count] = (await replies)?.[i] ?? [new Error('no reply'), 0];
        if (error) {
          // an error reply about the command itself (NOPERM: the user may not publish to that channel, …) is not retried
          const { code, retryable } = redisReply(error);
          throw new SinkWriteError(`Redis PUBLISH to "${channels[i]}" failed: ${errorMessage(error)}`, { cause: error, code, retryable });
        }
        if (count === 0 && ctx.noSubscribers === 'fail') {
          throw new SinkWriteError(
            `Redis PUBLISH to "${channels[i]}" reached 0 subscribers; nobody got it and Redis keeps nothing. Will retry ` +
              '(start the consuming microservice, or set redis: { noSubscribers: "count" } to count such messages as delivered).',
          );
        }
      });
    },
  };
}

/** `ClientMqtt`: `emit` at QoS 1 (default) resolves on the PUBACK; QoS 0 on the write to the socket. */
function mqtt(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  const v5 = () => c.mqttClient?.options?.protocolVersion === 5;
  return {
    transport: 'mqtt',
    confirmed: ctx.qos >= 1,
    delivered:
      ctx.qos >= 1
        ? `the broker acknowledged it (QoS ${ctx.qos}: ${ctx.qos === 1 ? 'PUBACK' : 'PUBCOMP'}) — it reached the broker, not necessarily a subscriber`
        : 'QoS 0: written to the socket, not confirmed',
    messageId: `the MQTT 5 user property "${MESSAGE_ID_HEADER}" (context.getPacket().properties.userProperties), or the payload's "${ctx.payloadIdKey || 'dwMessageId'}" field below MQTT 5`,
    state() {
      const client = c.mqttClient;
      if (!client) return 'unconnected';
      if (client.disconnecting) return 'closed';
      return client.connected ? 'up' : 'down';
    },
    send(messages) {
      const properties = v5();
      const key = ctx.payloadIdKey === undefined ? (properties ? false : 'dwMessageId') : ctx.payloadIdKey;
      return messages.map((m) => {
        let builder = new ctx.records.MqttRecordBuilder(withPayloadId(m.data, key, m.id)).setQoS(ctx.qos);
        if (properties) builder = builder.setProperties({ userProperties: { [MESSAGE_ID_HEADER]: m.id } });
        return refusing(emitted(ctx.client, m.pattern, builder.build()), mqttRefusal);
      });
    },
  };
}

/** `ClientKafka`: one `emitBatch` (one `producer.send`) per topic per batch; resolves on the producer's ack (`acks: -1`, all in-sync replicas, by default). */
function kafka(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  return {
    transport: 'kafka',
    confirmed: true,
    delivered: "the Kafka producer's send resolved: acked by the partition leader and, with the default acks = -1, by every in-sync replica",
    messageId: `the Kafka header "${MESSAGE_ID_HEADER}" (context.getMessage().headers)`,
    state() {
      return c._producer ? 'up' : 'unconnected';
    },
    send(messages) {
      const byTopic = new Map<string, number[]>();
      messages.forEach((m, i) => {
        const list = byTopic.get(m.pattern);
        if (list) list.push(i);
        else byTopic.set(m.pattern, [i]);
      });
      const results: Array<Promise<void>> = new Array(messages.length);
      for (const [topic, indexes] of byTopic) {
        const kafkaMessages = indexes.map((i) => ({ value: withPayloadId(messages[i].data, ctx.payloadIdKey, messages[i].id), headers: { [MESSAGE_ID_HEADER]: messages[i].id } }));
        const sent =
          typeof c.emitBatch === 'function'
            ? new Promise<void>((resolve, reject) => c.emitBatch!.call(ctx.client, topic, { messages: kafkaMessages }).subscribe({ error: reject, complete: () => resolve() }))
            : Promise.all(kafkaMessages.map((message) => emitted(ctx.client, topic, message))).then(() => undefined);
        sent.catch(() => undefined);
        for (const i of indexes) results[i] = sent;
      }
      return results;
    },
  };
}

/** The transport of a client. */
export function createTransport(transport: BrokerTransport, ctx: TransportContext): Transport {
  switch (transport) {
    case 'rmq':
      return rmq(ctx);
    case 'nats':
      return nats(ctx);
    case 'redis':
      return redis(ctx);
    case 'mqtt':
      return mqtt(ctx);
    case 'kafka':
      return kafka(ctx);
  }
}
