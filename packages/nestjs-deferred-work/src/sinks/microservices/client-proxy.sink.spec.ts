import { jest } from '@jest/globals';
import { ClientKafka, ClientNats, ClientRedis } from '@nestjs/microservices';
import type { ProducerBatch, ProducerRecord, RecordMetadata } from 'kafkajs';
import type { JobItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkAttachContext, SinkWriteResult } from '../../core/sink.interface';
import { ClientProxySink } from './client-proxy.sink';
import { emitEvent } from './emit-event';
import { sinkAttachContext } from '../../testing/sink-attach-context';

const job = (queue: string, name: string, data: unknown, opts?: JobItem['opts']): JobItem => ({ kind: 'job', queue, name, data, opts, when: 'success', createdAt: Date.now() });
const context = (warnings: string[] = []): SinkAttachContext => sinkAttachContext({ warn: (m) => warnings.push(m) });
const write = (sink: ClientProxySink, batch: SinkItem[]) => sink.write(batch, { signal: new AbortController().signal, attempt: 1 });

/** A write cut short by its signal before anything was confirmed: every item failed with the signal's reason, retryable. */
const allCutShort = (result: unknown, size: number) =>
  expect((result as SinkWriteResult | undefined)?.failed?.map((f) => [f.index, (f.error as Error).message, f.retryable])).toEqual(
    Array.from({ length: size }, (_, index) => [index, 'write timed out', true]),
  );

describe('ClientProxySink options', () => {
  it('fails at construction, saying what to pass', () => {
    expect(() => new ClientProxySink(undefined as never)).toThrow(/options must be an object, got undefined\. Pass new ClientProxySink\(\{ clientToken: 'ORDERS' \}\)/);
    expect(() => new ClientProxySink({})).toThrow(/Pass clientToken \(the name you gave ClientsModule\.register/);
    expect(() => new ClientProxySink({ client: {} as never })).toThrow(/option "client" must be a ClientProxy/);
    expect(() => new ClientProxySink({ client: new ClientRedis({}), mqtt: { qos: 3 as never } })).toThrow(/option "mqtt.qos" must be one of 0, 1, 2, got 3/);
    expect(() => new ClientProxySink({ client: new ClientRedis({}), redis: { noSubscribers: 'drop' as never } })).toThrow(/must be one of 'fail', 'count', got "drop"/);
    expect(() => new ClientProxySink({ client: new ClientRedis({}), nats: { jetStream: 'false' as never } })).toThrow(/option "nats.jetStream" must be one of true, false, got "false"/);
    expect(() => new ClientProxySink({ client: new ClientRedis({}), nats: { ackTimeoutMs: '2000' as never } })).toThrow(/option "nats.ackTimeoutMs" must be a whole number from 1 to 2147483647 \(ms\)/);
    const tcpLike = { emit: () => undefined, connect: async () => undefined, close: () => undefined };
    expect(() => new ClientProxySink({ client: tcpLike as never })).toThrow(/cannot tell the transport of a Object\. Pass transport/);
  });

  it('is named after its client token, knows its transport from the client, and says whether it confirms', () => {
    expect(new ClientProxySink({ clientToken: 'ORDERS' }).name).toBe('ORDERS');
    const redis = new ClientProxySink({ client: new ClientRedis({}), name: 'audit' });
    expect(redis.describe()).toMatchObject({ name: 'audit', transport: 'redis', confirmed: true });
    expect(new ClientProxySink({ client: new ClientRedis({}), redis: { noSubscribers: 'count' } }).confirmed).toBe(false);
  });

  it('refuses, when deferred, a job for another destination', () => {
    const sink = new ClientProxySink({ client: new ClientRedis({}), name: 'audit' });
    expect(() => sink.validate(job('mail', 'x', {}))).toThrow(/emits jobs whose queue is "audit", got "mail"/);
    expect(() => sink.validate(job('audit', 'x', {}))).not.toThrow();
  });

  it('emitEvent defers a job for the sink, sent to it whatever the routing', () => {
    const calls: unknown[][] = [];
    emitEvent({ job: (...args) => calls.push(args) }, 'audit', 'user.login', { id: 1 }, { jobId: 'login-1' });
    expect(calls).toEqual([['audit', 'user.login', { id: 1 }, { jobId: 'login-1', sink: 'audit' }]]);
  });

  it('fails at bootstrap when no client is registered under the token, naming the module call that registers it', async () => {
    const sink = new ClientProxySink({ clientToken: 'EVENTS' });
    await expect(sink.attach(context())).rejects.toThrow(
      /ClientProxySink "EVENTS": no client found as "EVENTS" \(nothing is registered\)\. Register it with ClientsModule\.register\(\[\{ name: 'EVENTS'/,
    );
    const wrong = new ClientProxySink({ clientToken: 'EVENTS' });
    await expect(wrong.attach(sinkAttachContext({ providers: { EVENTS: { emit: 'no' } } }))).rejects.toThrow(/the provider is not a ClientProxy/);
  });

  it('finds the registered client by its token, without a ModuleRef, and holds it open until the drain', async () => {
    const client = new ClientRedis({});
    const order: string[] = [];
    const close = client.close.bind(client);
    client.close = async () => void order.push('close');
    const sink = new ClientProxySink({ clientToken: 'EVENTS' });
    await sink.attach(sinkAttachContext({ providers: { EVENTS: client }, drain: async () => void order.push('drain') }));
    expect(sink.describe().transport).toBe('redis');
    await client.close();
    expect(order).toEqual(['drain', 'close']);
    await close();
  });
});

/**
 * Kafka, the mapping up to the producer: a real `ClientKafka` (its serializer, send options and
 * emitBatch), and a producer whose `send` / `sendBatch` take kafkajs's real `ProducerRecord` /
 * `ProducerBatch` and answer with `RecordMetadata`. Against a Kafka-protocol peer (librdkafka's mock
 * cluster): test/conformance/microservices-kafka.conformance.spec.ts.
 */
describe('ClientProxySink → ClientKafka → producer.send (no broker)', () => {
  function kafka(send: (record: ProducerRecord) => Promise<RecordMetadata[]>, sendBatch?: (batch: ProducerBatch) => Promise<RecordMetadata[]>) {
    const client = new ClientKafka({ client: { brokers: ['127.0.0.1:1'] }, send: { acks: -1, timeout: 5000 } });
    const producer = sendBatch ? { send, sendBatch } : { send };
    Object.assign(client, { _producer: producer, connect: async () => producer });
    return client;
  }
  const metadata = (topic: string): RecordMetadata[] => [{ topicName: topic, partition: 0, errorCode: 0 }];
  /** A client whose producer acks every sendBatch (and records it); `send` is not used. */
  function batchingKafka() {
    const batches: ProducerBatch[] = [];
    const client = kafka(
      async () => {
        throw new Error('not used');
      },
      async (batch) => {
        batches.push(batch);
        return batch.topicMessages!.flatMap((t) => metadata(t.topic));
      },
    );
    return { client, batches };
  }

  it("the whole batch in one sendBatch across topics, through the client's serializer and with its send options", async () => {
    const { client, batches } = batchingKafka();
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const batch = [job('events', 'order.placed', { id: 1 }, { jobId: 'order-1' }), job('events', 'user.login', { u: 'a' }, { jobId: 'login-1' }), job('events', 'order.placed', { id: 2 }, { jobId: 'order-2' })];
    await expect(write(sink, batch)).resolves.toBeUndefined();
    expect(batches).toHaveLength(1);
    expect(batches[0]).toMatchObject({ acks: -1, timeout: 5000 });
    expect(batches[0].topicMessages!.map((t) => [t.topic, t.messages.map((m) => [m.value, m.headers])])).toEqual([
      ['order.placed', [[JSON.stringify({ id: 1 }), { 'dw-message-id': 'order-1' }], [JSON.stringify({ id: 2 }), { 'dw-message-id': 'order-2' }]]],
      ['user.login', [[JSON.stringify({ u: 'a' }), { 'dw-message-id': 'login-1' }]]],
    ]);
  });

  it('an async serializer (as Nest allows, e.g. a schema registry): sendBatch gets the serialized messages, not promises; the pattern is passed as Nest passes it', async () => {
    const { client, batches } = batchingKafka();
    const patterns: unknown[] = [];
    const serializer = { serialize: async (m: { value: unknown; headers: unknown }, options?: { pattern?: unknown }) => (patterns.push(options?.pattern), { value: `encoded:${JSON.stringify(m.value)}`, headers: m.headers }) };
    Object.assign(client, { serializer });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    await expect(write(sink, [job('events', 'order.placed', { id: 1 }, { jobId: 'order-1' })])).resolves.toBeUndefined();
    expect(batches[0].topicMessages!.map((t) => [t.topic, t.messages.map((m) => m.value)])).toEqual([['order.placed', [`encoded:${JSON.stringify({ id: 1 })}`]]]);
    expect(patterns).toEqual(['order.placed']);
  });

  it('a write cut short by its signal keeps what the broker confirmed: only the unconfirmed fail (retryable), and a retry awaits them instead of sending again', async () => {
    const records: ProducerRecord[] = [];
    let release: (() => void) | undefined;
    const client = kafka(async (record) => {
      records.push(record);
      if (record.topic === 'slow') await new Promise<void>((resolve) => (release = resolve)); // its acks come late
      return metadata(record.topic);
    });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const batch = [job('events', 'fast', { n: 1 }), job('events', 'slow', { n: 2 }), job('events', 'fast', { n: 3 })];
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('write timed out')), 20);
    const result = await sink.write(batch, { signal: controller.signal, attempt: 10 });
    expect(result?.failed?.map((f) => [f.index, f.retryable])).toEqual([[1, true]]);
    release!();
    await expect(sink.write([batch[1]], { signal: new AbortController().signal, attempt: 11 })).resolves.toBeUndefined();
    expect(records.map((r) => r.topic)).toEqual(['fast', 'slow']); // 'slow' was not sent twice
  });

  it("Nest 10's ClientKafka (its producer under `producer`, not `_producer`): the sink sees it connected and sends through it", async () => {
    const { client, batches } = batchingKafka();
    const producer = (client as unknown as { _producer: unknown })._producer;
    Object.assign(client, { _producer: undefined });
    Object.defineProperty(client, 'producer', { value: producer }); // Nest 10: a plain property
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    await expect(write(sink, [job('events', 'order.placed', { id: 1 }, { jobId: 'order-1' })])).resolves.toBeUndefined();
    expect(batches).toHaveLength(1);
  });

  it('a refused sendBatch over several topics: each topic sent on its own, only the refused topic fails', async () => {
    const records: ProducerRecord[] = [];
    const client = kafka(
      async (record) => {
        records.push(record);
        if (record.topic === 'bad') throw new Error('TOPIC_AUTHORIZATION_FAILED');
        return metadata(record.topic);
      },
      async () => {
        throw new Error('TOPIC_AUTHORIZATION_FAILED');
      },
    );
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const result = await write(sink, [job('events', 'good', { n: 1 }), job('events', 'bad', {}), job('events', 'good', { n: 2 })]);
    expect(result).toEqual({ failed: [expect.objectContaining({ index: 1, retryable: true })] });
    expect(records.map((r) => [r.topic, r.messages.length])).toEqual([['good', 2], ['bad', 1]]);
  });

  it('one send per topic per batch, the data as the value and the stable id as a header', async () => {
    const records: ProducerRecord[] = [];
    let failNext = false;
    const client = kafka(async (record) => {
      records.push(record);
      if (failNext) {
        failNext = false;
        throw new Error('LEADER_NOT_AVAILABLE');
      }
      return [{ topicName: record.topic, partition: 0, errorCode: 0 }];
    });
    const sink = new ClientProxySink({ client, name: 'events' });
    const warnings: string[] = [];
    await sink.attach(context(warnings));
    expect(sink.describe()).toMatchObject({ transport: 'kafka', confirmed: true });
    expect(warnings).toEqual([]);

    const batch = [job('events', 'order.placed', { id: 1 }, { jobId: 'order-1' }), job('events', 'user.login', { u: 'a' }), job('events', 'order.placed', { id: 2 }, { jobId: 'order-2' })];
    await expect(write(sink, batch)).resolves.toBeUndefined();

    expect(records.map((r) => r.topic)).toEqual(['order.placed', 'user.login']);
    expect(records[0].messages.map((m) => [m.value, m.headers])).toEqual([
      [JSON.stringify({ id: 1 }), { 'dw-message-id': 'order-1' }],
      [JSON.stringify({ id: 2 }), { 'dw-message-id': 'order-2' }],
    ]);
    expect(String(records[1].messages[0].headers!['dw-message-id'])).toMatch(/^dw-[0-9a-f-]{36}$/);
    // the derived id is kept across a retry of the same item (its first send refused)
    const retried = job('events', 'user.login', { u: 'r' });
    failNext = true;
    await expect(write(sink, [retried])).resolves.toEqual({ failed: [expect.objectContaining({ index: 0, retryable: true })] });
    await expect(write(sink, [retried])).resolves.toBeUndefined();
    expect(records[3].messages[0].headers).toEqual(records[2].messages[0].headers);
    expect(records[3].messages[0].headers).not.toEqual(records[1].messages[0].headers);
    // a spooled item's stable id (kept on disk, the same after a replay) is the message id when it has no jobId
    await write(sink, [{ ...job('events', 'user.login', { u: 'b' }), id: 'dw-spooled-9' }]);
    expect(records[4].messages[0].headers).toEqual({ 'dw-message-id': 'dw-spooled-9' });
  });

  it('a send the producer rejects fails only the items of that topic, retryably', async () => {
    const client = kafka(async (record) => {
      if (record.topic === 'bad') throw new Error('NOT_LEADER_FOR_PARTITION');
      return [{ topicName: record.topic, partition: 0, errorCode: 0 }];
    });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const result = await write(sink, [job('events', 'good', {}), job('events', 'bad', {}), job('events', 'good', {})]);
    expect(result).toEqual({ failed: [expect.objectContaining({ index: 1, retryable: true })] });
    expect(String((result as { failed: Array<{ error: Error }> }).failed[0].error.message)).toMatch(/NOT_LEADER_FOR_PARTITION/);
  });

  it('a send confirmed after its write timed out is not sent again by the retry: the retry counts it delivered', async () => {
    const records: ProducerRecord[] = [];
    let confirm: () => void = () => undefined;
    const client = kafka((record) => {
      records.push(record);
      return new Promise((resolve) => (confirm = () => resolve([{ topicName: record.topic, partition: 0, errorCode: 0 }])));
    });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const batch = [job('events', 'order.placed', { id: 1 })];
    const timeout = new AbortController();
    const first = sink.write(batch, { signal: timeout.signal, attempt: 1 });
    await new Promise((r) => setImmediate(r));
    timeout.abort(new Error('write timed out'));
    allCutShort(await first, 1);
    confirm(); // the broker's ack arrives between the timeout and the retry
    await new Promise((r) => setImmediate(r));
    await expect(sink.write(batch, { signal: new AbortController().signal, attempt: 2 })).resolves.toBeUndefined();
    expect(records).toHaveLength(1);
  });

  it('a send the producer rejected is sent again by the retry', async () => {
    const records: ProducerRecord[] = [];
    const client = kafka(async (record) => {
      records.push(record);
      if (records.length === 1) throw new Error('REQUEST_TIMED_OUT');
      return [{ topicName: record.topic, partition: 0, errorCode: 0 }];
    });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const batch = [job('events', 'order.placed', { id: 1 })];
    await expect(write(sink, batch)).resolves.toEqual({ failed: [expect.objectContaining({ index: 0, retryable: true })] });
    await expect(sink.write(batch, { signal: new AbortController().signal, attempt: 2 })).resolves.toBeUndefined();
    expect(records).toHaveLength(2);
  });
});

/**
 * RabbitMQ on 127.0.0.1:5672 (the machine's broker; see docs/sinks/microservices.md). Nest 12's
 * ClientRMQ makes two ChannelWrappers on its first connect and listens for 'error' on neither; one that
 * errs while being set up again after a connection cut would end the process (seen in CI).
 */
describe("ClientProxySink and Nest 10's ClientNats (no status stream)", () => {
  it('reads the connection itself: while nats.js reconnects (protocol.connected false) nothing is handed to it', async () => {
    const client = new ClientNats({ servers: ['nats://127.0.0.1:4222'] });
    Object.defineProperty(client, 'status', { value: undefined }); // Nest 10 has none
    const published: unknown[] = [];
    const nc = { isClosed: () => false, protocol: { connected: false }, publish: (...args: unknown[]) => void published.push(args), flush: async () => undefined };
    Object.assign(client, { natsClient: nc, connect: async () => nc });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const result = (await write(sink, [job('events', 'order.placed', { id: 1 })])) as SinkWriteResult;
    expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([[0, true]]);
    expect(String(result.failed![0].error)).toMatch(/the nats broker is not connected; not sending/);
    expect(published).toEqual([]);
    nc.protocol.connected = true;
    await expect(write(sink, [job('events', 'order.placed', { id: 1 })])).resolves.toBeUndefined();
    expect(published).toHaveLength(1);
  });
});

describe('ClientProxySink and ClientRMQ channels', () => {
  it("listens for 'error' on every channel of the client's connection manager once it is connected", async () => {
    const { createConnection } = await import('node:net');
    await new Promise<void>((resolve, reject) => {
      const socket = createConnection(5672, '127.0.0.1', () => socket.end(resolve));
      socket.on('error', (error) => reject(new Error(`RabbitMQ is not reachable on 127.0.0.1:5672 (${error.message}): start it (rabbitmq-server -detached; guest/guest).`)));
    });
    const { ClientRMQ } = await import('@nestjs/microservices');
    const client = new ClientRMQ({ urls: ['amqp://guest:guest@127.0.0.1:5672'], queue: `dw-guard-${process.pid}`, queueOptions: { durable: false, autoDelete: true } });
    const sink = new ClientProxySink({ client, name: 'events' });
    const warnings: string[] = [];
    try {
      await sink.attach(context(warnings));
      await expect(write(sink, [job('events', 'order.placed', { id: 1 })])).resolves.toBeUndefined();
      const channels = (client as unknown as { client: { _channels: Array<{ listenerCount(event: string): number }> } }).client._channels;
      expect(channels.length).toBeGreaterThan(0);
      expect(channels.map((channel) => channel.listenerCount('error') > 0)).toEqual(channels.map(() => true));
    } finally {
      await client.close();
    }
  });

  it('a channel made later, also by a connection manager made on a reconnect, is heard from the moment it is made', async () => {
    const { ClientRMQ } = await import('@nestjs/microservices');
    const client = new ClientRMQ({ urls: ['amqp://guest:guest@127.0.0.1:5672'], queue: `dw-guard2-${process.pid}`, queueOptions: { durable: false, autoDelete: true } });
    // Not held open: the test closes the client itself to make ClientRMQ reconnect on the next emit.
    const sink = new ClientProxySink({ client, name: 'events', drainBeforeClientClose: false });
    const warnings: string[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    type Manager = { createChannel(options: { setup: () => Promise<void> }): unknown };
    const manager = () => (client as unknown as { client: Manager }).client;
    // what a connection cut during a channel's setup does: its setup fails after the call that made it returned
    const failingChannel = (reason: string) => manager().createChannel({ setup: () => Promise.reject(new Error(reason)) });
    const warned = async (reason: string) => {
      for (let i = 0; i < 100 && !warnings.some((w) => w.includes(reason)); i++) await new Promise((r) => setTimeout(r, 20));
      expect(warnings).toContainEqual(expect.stringContaining(reason));
    };
    try {
      await sink.attach(context(warnings));
      await expect(write(sink, [job('events', 'order.placed', { id: 1 })])).resolves.toBeUndefined();
      // between two writes, with no connect or disconnect event in between
      failingChannel('setup refused, first connection');
      await warned('setup refused, first connection');
      // a reconnect: ClientRMQ makes a new connection manager
      const first = manager();
      await client.close();
      await expect(write(sink, [job('events', 'order.placed', { id: 2 })])).resolves.toBeUndefined();
      expect(manager()).not.toBe(first);
      failingChannel('setup refused, second connection');
      await warned('setup refused, second connection');
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await client.close();
    }
  });
});

/**
 * How a message reaches the client: `ClientProxy`'s own `emit` is stepped around (its rxjs pipeline
 * adds nothing once the sink has seen the client connected), a client's own `emit` is not. Against the
 * machine's RabbitMQ and NATS, each message read back from the broker.
 */
describe('ClientProxySink and the client\'s emit', () => {
  const rmqUrl = 'amqp://guest:guest@127.0.0.1:5672';
  const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

  async function rmqQueue(queue: string) {
    const amqplib = 'amqplib'; // a dev dependency without types of its own
    const amqp = (await import(amqplib)) as { connect(url: string): Promise<{ createChannel(): Promise<AmqpChannel>; close(): Promise<void> }> };
    const connection = await amqp.connect(rmqUrl).catch((error: Error) => {
      throw new Error(`RabbitMQ is not reachable on 127.0.0.1:5672 (${error.message}): start it (rabbitmq-server -detached; guest/guest).`);
    });
    const channel = await connection.createChannel();
    await channel.assertQueue(queue, { durable: false, autoDelete: false, arguments: { 'x-expires': 600_000 } });
    return {
      async read(): Promise<number[]> {
        const got: number[] = [];
        for (let m = await channel.get(queue, { noAck: true }); m; m = await channel.get(queue, { noAck: true })) got.push((JSON.parse(m.content.toString()) as { data: { n: number } }).data.n);
        return got;
      },
      async close() {
        await channel.deleteQueue(queue);
        await connection.close();
      },
    };
  }
  interface AmqpChannel {
    assertQueue(queue: string, options: object): Promise<unknown>;
    get(queue: string, options: { noAck: boolean }): Promise<false | { content: Buffer }>;
    deleteQueue(queue: string): Promise<unknown>;
  }

  it("RabbitMQ: a ClientRMQ with ClientProxy's own emit is sent to without calling it; a never-connected client's write of three pieces waits for its one first connection; every message confirmed and in the queue once", async () => {
    const { ClientProxy, ClientRMQ } = await import('@nestjs/microservices');
    const queue = `dw-dispatch-${process.pid}`;
    const broker = await rmqQueue(queue);
    const client = new ClientRMQ({ urls: [rmqUrl], queue, queueOptions: { durable: false, arguments: { 'x-expires': 600_000 } } });
    const emit = jest.spyOn(ClientProxy.prototype, 'emit');
    const dispatch = jest.spyOn(client as unknown as { dispatchEvent(packet: unknown): Promise<unknown> }, 'dispatchEvent');
    try {
      const sink = new ClientProxySink({ client, name: 'events' });
      await sink.attach(context());
      await expect(write(sink, ids(120).map((n) => job('events', 'order.placed', { n })))).resolves.toBeUndefined();
      expect(emit).not.toHaveBeenCalled();
      expect(dispatch).toHaveBeenCalledTimes(120);
      expect((await broker.read()).sort((a, b) => a - b)).toEqual(ids(120));
    } finally {
      emit.mockRestore();
      await client.close();
      await broker.close();
    }
  });

  it("RabbitMQ: a piece of 50 leaves through the connection's socket in a few writes, not one per message, and the socket is left uncorked", async () => {
    const { ClientRMQ } = await import('@nestjs/microservices');
    const queue = `dw-dispatch-cork-${process.pid}`;
    const broker = await rmqQueue(queue);
    const client = new ClientRMQ({ urls: [rmqUrl], queue, queueOptions: { durable: false, arguments: { 'x-expires': 600_000 } } });
    try {
      const sink = new ClientProxySink({ client, name: 'events' });
      await sink.attach(context());
      await expect(write(sink, [job('events', 'order.placed', { n: -1 })])).resolves.toBeUndefined(); // connects
      type Socket = { _write: (...a: unknown[]) => unknown; _writev: (...a: unknown[]) => unknown; writableCorked: number };
      const socket = (client as unknown as { client: { _currentConnection: { connection: { stream: Socket } } } }).client._currentConnection.connection.stream;
      let writes = 0;
      for (const method of ['_write', '_writev'] as const) {
        const original = socket[method];
        socket[method] = function (this: unknown, ...args: unknown[]) {
          writes++;
          return original.apply(this, args);
        };
      }
      await expect(write(sink, ids(100).map((n) => job('events', 'order.placed', { n })))).resolves.toBeUndefined();
      expect(writes).toBeGreaterThan(0);
      expect(writes).toBeLessThanOrEqual(12); // two pieces; uncorked, each of the 100 publishes is a write of its own
      expect(socket.writableCorked).toBe(0);
      expect((await broker.read()).sort((a, b) => a - b)).toEqual([-1, ...ids(100)]);
    } finally {
      await client.close();
      await broker.close();
    }
  });

  it('RabbitMQ: a client with an emit of its own (a subclass) is sent to through it', async () => {
    const { ClientRMQ } = await import('@nestjs/microservices');
    const queue = `dw-dispatch-own-${process.pid}`;
    const broker = await rmqQueue(queue);
    const emitted: unknown[] = [];
    class TracedClient extends ClientRMQ {
      override emit<R, I>(pattern: unknown, data: I) {
        emitted.push(pattern);
        return super.emit<R, I>(pattern, data);
      }
    }
    const client = new TracedClient({ urls: [rmqUrl], queue, queueOptions: { durable: false, arguments: { 'x-expires': 600_000 } } });
    try {
      const sink = new ClientProxySink({ client, name: 'events', transport: 'rmq' });
      await sink.attach(context());
      await expect(write(sink, ids(60).map((n) => job('events', 'order.placed', { n })))).resolves.toBeUndefined();
      expect(emitted).toEqual(ids(60).map(() => 'order.placed'));
      expect((await broker.read()).sort((a, b) => a - b)).toEqual(ids(60));
    } finally {
      await client.close();
      await broker.close();
    }
  });

  /** A core NATS subscriber on a subject of its own, and what it got. */
  async function natsSubscriber(subject: string) {
    const { connect } = await import('@nats-io/transport-node');
    const nc = await connect({ servers: '127.0.0.1:4222' }).catch((error: Error) => {
      throw new Error(`NATS is not reachable on 127.0.0.1:4222 (${error.message}): start nats-server -p 4222 -js.`);
    });
    const got: number[] = [];
    const subscription = nc.subscribe(subject, { callback: (_e, m) => void got.push((m.json() as { data: { n: number } }).data.n) });
    await nc.flush();
    return {
      async received(count: number): Promise<number[]> {
        await nc.flush();
        for (let i = 0; i < 50 && got.length < count; i++) await new Promise((r) => setTimeout(r, 20));
        return [...got].sort((a, b) => a - b);
      },
      async close() {
        subscription.unsubscribe();
        await nc.close();
      },
    };
  }

  it('core NATS: sent without emit, then flushed; a subscriber gets every message once', async () => {
    const { ClientProxy, ClientNats } = await import('@nestjs/microservices');
    const subject = `dw.dispatch.${process.pid}`;
    const subscriber = await natsSubscriber(subject);
    const client = new ClientNats({ servers: ['nats://127.0.0.1:4222'] });
    const emit = jest.spyOn(ClientProxy.prototype, 'emit');
    try {
      const sink = new ClientProxySink({ client, name: 'events' });
      await sink.attach(context());
      await expect(write(sink, ids(80).map((n) => job('events', subject, { n })))).resolves.toBeUndefined();
      expect(emit).not.toHaveBeenCalled();
      expect(await subscriber.received(80)).toEqual(ids(80));
    } finally {
      emit.mockRestore();
      await client.close();
      await subscriber.close();
    }
  });

  it('core NATS: a flush cut by a dropped connection fails the batch, retryable, with the code ECONNRESET when the client gives none', async () => {
    const client = new ClientNats({ servers: ['nats://127.0.0.1:4222'] });
    try {
      const sink = new ClientProxySink({ client, name: 'events' });
      await sink.attach(context());
      await write(sink, [job('events', `dw.flush.${process.pid}`, { n: 0 })]); // connected
      // nats.js rejects a pending flush with a codeless error when its connection drops under it
      const nc = (client as unknown as { natsClient: { flush(): Promise<void> } }).natsClient;
      const flush = jest.spyOn(nc, 'flush').mockRejectedValueOnce(new Error('connection disconnected'));
      const result = (await write(sink, ids(3).map((n) => job('events', `dw.flush.${process.pid}`, { n })))) as Exclude<SinkWriteResult, void>;
      expect(flush).toHaveBeenCalledTimes(1);
      expect(result.failed!.map((f) => [f.index, f.retryable ?? true, (f.error as { code?: string }).code])).toEqual([
        [0, true, 'ECONNRESET'],
        [1, true, 'ECONNRESET'],
        [2, true, 'ECONNRESET'],
      ]);
      expect(String(result.failed![0].error)).toContain('the connection failed before the batch was flushed: connection disconnected');
    } finally {
      await client.close();
    }
  });

  it("core NATS: ClientProxy's emit wrapped by a shimmer-style instrumentation (__wrapped, __original) is called for every message", async () => {
    const { ClientProxy, ClientNats } = await import('@nestjs/microservices');
    const subject = `dw.dispatch.wrapped.${process.pid}`;
    const subscriber = await natsSubscriber(subject);
    const client = new ClientNats({ servers: ['nats://127.0.0.1:4222'] });
    const original = ClientProxy.prototype.emit;
    let calls = 0;
    const wrapped = Object.assign(
      function (this: unknown, ...args: unknown[]) {
        calls++;
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      },
      { __wrapped: true, __original: original },
    );
    ClientProxy.prototype.emit = wrapped as unknown as typeof original;
    try {
      const sink = new ClientProxySink({ client, name: 'events' });
      await sink.attach(context());
      await expect(write(sink, ids(30).map((n) => job('events', subject, { n })))).resolves.toBeUndefined();
      expect(calls).toBe(30);
      expect(await subscriber.received(30)).toEqual(ids(30));
    } finally {
      ClientProxy.prototype.emit = original;
      await client.close();
      await subscriber.close();
    }
  });

  it('core NATS: a subclass whose dispatchEvent answers an observable (emit accepts one) is awaited through it', async () => {
    const { ClientNats } = await import('@nestjs/microservices');
    const { from } = await import('rxjs');
    const subject = `dw.dispatch.observable.${process.pid}`;
    const subscriber = await natsSubscriber(subject);
    let dispatched = 0;
    class ObservableClient extends ClientNats {
      protected override dispatchEvent<T = unknown>(packet: Parameters<ClientNats['dispatchEvent']>[0]): Promise<T> {
        dispatched++;
        return from(super.dispatchEvent(packet)) as unknown as Promise<T>;
      }
    }
    const client = new ObservableClient({ servers: ['nats://127.0.0.1:4222'] });
    try {
      const sink = new ClientProxySink({ client, name: 'events', transport: 'nats' });
      await sink.attach(context());
      await expect(write(sink, ids(20).map((n) => job('events', subject, { n })))).resolves.toBeUndefined();
      expect(dispatched).toBe(20);
      expect(await subscriber.received(20)).toEqual(ids(20));
    } finally {
      await client.close();
      await subscriber.close();
    }
  });
});

/** A large write in pieces, through a real `ClientRedis` whose publisher connection records each pipeline (no broker). */
describe('ClientProxySink writes of more than one send', () => {
  /** `onExec` runs as each pipeline is sent (its number, from 1); the replies wait for what it returns. */
  function redisClient(onExec: (pub: { status: string }, sent: number) => void | Promise<void> = () => undefined) {
    const pipelines: string[][] = [];
    const pub = {
      status: 'ready',
      pipeline() {
        const channels: string[] = [];
        return {
          publish: (channel: string) => void channels.push(channel),
          exec: async () => {
            pipelines.push(channels);
            await onExec(pub, pipelines.length);
            return channels.map((): [null, number] => [null, 1]);
          },
        };
      },
    };
    const client = new ClientRedis({});
    Object.assign(client, { pubClient: pub, connect: async () => pub });
    return { client, pipelines };
  }
  const jobs = (count: number) => Array.from({ length: count }, (_, n) => job('events', `e.${n}`, { n }));

  it('hands a large batch to the client 50 messages at a time, in order, the next piece a turn of the event loop later; each message sent once', async () => {
    const { client, pipelines } = redisClient();
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const written = write(sink, jobs(120));
    await Promise.resolve();
    await Promise.resolve();
    expect(pipelines).toHaveLength(1); // the rest waits for the requests that arrived meanwhile
    await expect(written).resolves.toBeUndefined();
    expect(pipelines.map((p) => p.length)).toEqual([50, 50, 20]);
    expect(pipelines.flat()).toEqual(jobs(120).map((j) => j.name));
  });

  it('the connection lost after the first piece: the pieces not yet sent stay unsent, their items retried', async () => {
    const { client, pipelines } = redisClient((pub) => void (pub.status = 'reconnecting'));
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const result = await write(sink, jobs(120));
    expect(pipelines).toHaveLength(1);
    expect(result?.failed?.map((f) => f.index)).toEqual(Array.from({ length: 70 }, (_, k) => 50 + k));
    expect(result?.failed?.every((f) => f.retryable === true)).toBe(true);
  });

  it('a connection state that cannot be read fails the piece retryably: nothing counted delivered unsent', async () => {
    const { client, pipelines } = redisClient();
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const transport = (sink as unknown as { transport: { state: () => string } }).transport;
    transport.state = () => {
      if (pipelines.length > 0) throw new Error('state unreadable');
      return 'up';
    };
    const result = await write(sink, jobs(120));
    expect(pipelines).toHaveLength(1);
    expect(result?.failed?.map((f) => f.index)).toEqual(Array.from({ length: 70 }, (_, k) => 50 + k));
    expect(result?.failed?.every((f) => f.retryable === true && String(f.error).includes('state unreadable'))).toBe(true);
  });

  it('a retry after a timeout: messages still awaiting their reply are waited for, not sent again; the rest go out in pieces', async () => {
    const controller = new AbortController();
    let answerFirst: (() => void) | undefined;
    const { client, pipelines } = redisClient((_, sent) => {
      if (sent > 1) return;
      controller.abort(new Error('write timed out')); // the first piece's replies are late
      return new Promise<void>((resolve) => (answerFirst = resolve));
    });
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    const batch = jobs(120);
    allCutShort(await sink.write(batch, { signal: controller.signal, attempt: 1 }), 120);
    expect(pipelines.map((p) => p.length)).toEqual([50]);
    const retry = sink.write(batch, { signal: new AbortController().signal, attempt: 2 });
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(pipelines.map((p) => p.length)).toEqual([50, 50, 20]); // the 50 awaiting their reply are not in these
    answerFirst!();
    await expect(retry).resolves.toBeUndefined();
    expect(pipelines.flat().sort()).toEqual(batch.map((j) => j.name).sort()); // each message sent once
  });

  it('a write cut short by its signal sends nothing after the abort', async () => {
    const controller = new AbortController();
    const { client, pipelines } = redisClient(() => controller.abort(new Error('write timed out')));
    const sink = new ClientProxySink({ client, name: 'events' });
    await sink.attach(context());
    allCutShort(await sink.write(jobs(200), { signal: controller.signal, attempt: 1 }), 200);
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(pipelines).toHaveLength(1);
  });
});
