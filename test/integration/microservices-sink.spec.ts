import { Controller, Get, Param, type INestMicroservice } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  type DeferredStats,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  MemorySink,
} from 'nestjs-deferred-work';
import { ClientProxySink, type ClientProxySinkOptions, emitEvent } from 'nestjs-deferred-work/microservices';
import { eventually } from '../support/eventually';
import { identityHolds, load, loadThroughOutage, range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';
import { requireBroker, TcpProxy } from '../support/tcp-proxy';

/**
 * ClientProxySink against the real brokers running on this machine (RabbitMQ, NATS with JetStream,
 * Redis, Mosquitto), each message consumed by a real Nest microservice's @EventPattern handler.
 * Names are private to this run (queue, subjects, channels, topics). Outages are made by a TCP proxy
 * in front of the broker, never by stopping a shared broker.
 */
const RUN = `dw-ms-${process.pid}-${Date.now().toString(36)}`;
const PATTERN = `${RUN}.order`;
const SINK = 'EVENTS';

/** What the consumer saw: runs per stable id, and the payloads. */
const consumed = { runs: new Map<string, number>(), total: 0, payloads: [] as unknown[] };
let idOf: (data: unknown, ctx: unknown) => string | undefined = () => undefined;

@Controller()
class Consumer {
  @EventPattern(PATTERN)
  onOrder(@Payload() data: unknown, @Ctx() ctx: unknown): void {
    const id = idOf(data, ctx) ?? 'missing';
    consumed.total++;
    consumed.payloads.push(data);
    consumed.runs.set(id, (consumed.runs.get(id) ?? 0) + 1);
  }
}

@Controller()
class EventsController {
  @Get('order/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    emitEvent(work, SINK, PATTERN, { id }, { jobId: `order-${id}` });
    return { id };
  }
}

type Broker = 'rmq' | 'nats' | 'redis' | 'mqtt';

interface BrokerCase {
  broker: Broker;
  port: number;
  howTo: string;
  /** The client options (and the server's) for a broker reachable on `port`. */
  options(port: number): Record<string, unknown>;
  transport: Transport;
  id(data: unknown, ctx: unknown): string | undefined;
  confirmed: boolean;
  sink?: Partial<ClientProxySinkOptions>;
}

const rmqQueue = (suffix: string) => `${RUN}-${suffix}`;
let rmqSuffix = 'q0';

const cases: BrokerCase[] = [
  {
    broker: 'rmq',
    port: 5672,
    howTo: 'start RabbitMQ (rabbitmq-server -detached; guest/guest on 127.0.0.1:5672).',
    transport: Transport.RMQ,
    options: (port) => ({ urls: [`amqp://guest:guest@127.0.0.1:${port}`], queue: rmqQueue(rmqSuffix), queueOptions: { durable: false, autoDelete: false } }),
    id: (_data, ctx) => (ctx as { getMessage(): { properties: { messageId?: string } } }).getMessage().properties.messageId,
    confirmed: true,
  },
  {
    broker: 'nats',
    port: 4222,
    howTo: 'start nats-server with JetStream (nats-server -a 127.0.0.1 -p 4222 -js).',
    transport: Transport.NATS,
    options: (port) => ({ servers: [`nats://127.0.0.1:${port}`] }),
    id: (_data, ctx) => (ctx as { getHeaders(): { get(k: string): string } | undefined }).getHeaders()?.get('Nats-Msg-Id'),
    confirmed: false,
  },
  {
    broker: 'redis',
    port: 6379,
    howTo: 'start redis-server on 127.0.0.1:6379.',
    transport: Transport.REDIS,
    options: (port) => ({ host: '127.0.0.1', port, retryAttempts: 1000, retryDelay: 50 }),
    id: (data) => (data as { dwMessageId?: string }).dwMessageId,
    confirmed: true,
  },
  {
    broker: 'mqtt',
    port: 1883,
    howTo: 'start mosquitto on 127.0.0.1:1883 (mosquitto -d).',
    transport: Transport.MQTT,
    options: (port) => ({ url: `mqtt://127.0.0.1:${port}`, protocolVersion: 5, subscribeOptions: { qos: 1 } }),
    id: (_data, ctx) => (ctx as { getPacket(): { properties?: { userProperties?: Record<string, string> } } }).getPacket().properties?.userProperties?.['dw-message-id'],
    confirmed: true,
  },
];

async function startConsumer(c: BrokerCase, port = c.port): Promise<INestMicroservice> {
  idOf = c.id;
  const moduleRef = await Test.createTestingModule({ controllers: [Consumer] }).compile();
  const ms = moduleRef.createNestMicroservice({ transport: c.transport, options: c.options(port) } as never);
  ms.useLogger(false);
  await ms.listen();
  return ms;
}

interface ProducerApp {
  started: StartedApp;
  work: DeferredWork;
  sink: ClientProxySink;
  client: ClientProxy;
}

async function startProducer(platform: Platform, c: BrokerCase, options: { port?: number; deferred?: DeferredWorkModuleOptions; sink?: Partial<ClientProxySinkOptions> } = {}): Promise<ProducerApp> {
  let sink: ClientProxySink | undefined;
  const started = await startApp(platform, {
    imports: [
      ClientsModule.register([{ name: SINK, transport: c.transport, options: c.options(options.port ?? c.port) } as never]),
      DeferredWorkModule.forRootAsync({
        inject: [ModuleRef],
        useFactory: (moduleRef: ModuleRef) => {
          sink = new ClientProxySink({ moduleRef, clientToken: SINK, ...c.sink, ...options.sink });
          return { sinks: [sink, new MemorySink()], ...options.deferred };
        },
      }),
    ],
    controllers: [EventsController],
  });
  return { started, work: started.app.get(DeferredWork), sink: sink!, client: started.app.get(SINK) };
}

function resetConsumed(): void {
  consumed.runs.clear();
  consumed.total = 0;
  consumed.payloads.length = 0;
}

const notFlushed = (app: ProducerApp) => new Error(`not flushed: ${JSON.stringify(app.work.stats().sinks[SINK])}`);
const sinkStats = (stats: DeferredStats) => stats.sinks[SINK];

beforeAll(async () => {
  for (const c of cases) await requireBroker(c.broker, c.port, c.howTo);
});

describe.each(platforms)('ClientProxySink: N requests → N events consumed by a real @EventPattern ($name)', (platform) => {
  failOnUnhandledRejection();

  describe.each(cases)('$broker', (c) => {
    let consumer: INestMicroservice | undefined;
    let app: ProducerApp | undefined;
    afterEach(async () => {
      await app?.started.close();
      await consumer?.close();
      app = undefined;
      consumer = undefined;
    });

    it('delivers each request\'s event exactly once, with its stable id where the consumer can read it', async () => {
      rmqSuffix = `${platform.name}-n`;
      resetConsumed();
      consumer = await startConsumer(c);
      app = await startProducer(platform, c);
      const ids = range(0, 120).map(String);
      const statuses = await load(app.started.url, ids.map((id) => `/order/${id}`), 20);

      expect(statuses.every((s) => s === 200)).toBe(true);
      if (!(await app.work.flush(10_000))) throw notFlushed(app);
      const stats = sinkStats(app.work.stats());
      expect(stats).toMatchObject({ accepted: 120, delivered: 120, pending: 0, dropped: 0, deadLettered: 0 });
      expect(stats.writes).toBeLessThan(120);
      await eventually(() => expect(consumed.total).toBe(120), 10_000);
      await new Promise((r) => setTimeout(r, 200)); // nothing more arrives
      expect(consumed.total).toBe(120);
      expect([...consumed.runs.keys()].sort()).toEqual(ids.map((id) => `order-${id}`).sort());
      expect(app.sink.describe()).toMatchObject({ transport: c.broker, confirmed: c.confirmed });
    });
  });
});

/** Producer-side options that reconnect quickly after an outage (the consumer uses the same). */
const quickReconnect: Record<Broker, Record<string, unknown>> = {
  rmq: { socketOptions: { reconnectTimeInSeconds: 0.1, heartbeatIntervalInSeconds: 1 } },
  nats: { reconnectTimeWait: 100, maxReconnectAttempts: -1 },
  redis: {},
  mqtt: { reconnectPeriod: 100 },
};
const outageRetries: DeferredWorkModuleOptions = { sinkOptions: { [SINK]: { maxAttempts: 80, initialBackoffMs: 50, maxBackoffMs: 250, writeTimeoutMs: 1000 } } };

describe.each(platforms)('ClientProxySink: the connection to the broker cut mid-load and restored ($name)', (platform) => {
  failOnUnhandledRejection();

  describe.each(cases)('$broker', (c) => {
    let consumer: INestMicroservice | undefined;
    let app: ProducerApp | undefined;
    let proxy: TcpProxy | undefined;
    afterEach(async () => {
      await proxy?.start();
      await app?.started.close();
      await consumer?.close();
      await proxy?.close();
      app = undefined;
      consumer = undefined;
      proxy = undefined;
    });

    it('answers every request 2xx, keeps the identity at every sample, and every event reaches the consumer (at least once, duplicates detectable by id)', async () => {
      rmqSuffix = `${platform.name}-outage`;
      resetConsumed();
      consumer = await startConsumer(c); // straight to the broker: it keeps consuming through the outage
      proxy = new TcpProxy(c.port);
      await proxy.listen();
      const base = c.options;
      const viaProxy: BrokerCase = { ...c, options: (port) => ({ ...base(port), ...quickReconnect[c.broker] }) };
      app = await startProducer(platform, viaProxy, { port: proxy.port, deferred: outageRetries });
      const ids = range(0, 150).map(String);

      const { statuses, watched } = await loadThroughOutage({ url: app.started.url, paths: ids.map((id) => `/order/${id}`), redis: proxy, work: app.work, sink: SINK });

      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(watched.checks).toBeGreaterThan(0);
      expect(watched.broken).toEqual([]);
      if (!(await app.work.flush(20_000))) throw notFlushed(app);
      const stats = app.work.stats();
      expect(identityHolds(stats, SINK)).toBe(true);
      expect(sinkStats(stats)).toMatchObject({ accepted: 150, delivered: 150, pending: 0, dropped: 0, deadLettered: 0 });
      expect(sinkStats(stats).failedWrites).toBeGreaterThan(0);
      await eventually(() => expect(consumed.runs.size).toBe(150), 15_000);
      await new Promise((r) => setTimeout(r, 300));
      expect([...consumed.runs.keys()].sort()).toEqual(ids.map((id) => `order-${id}`).sort());
      const duplicates = consumed.total - consumed.runs.size;
      console.log(`[${c.broker}/${platform.name}] outage: ${sinkStats(stats).failedWrites} failed writes, ${sinkStats(stats).retried} retries, ${duplicates} duplicate deliveries (same id)`);
      // At least once, not exactly once: a message whose confirmation (RabbitMQ confirm, MQTT PUBACK,
      // Redis reply) was lost in the cut is sent again — by the sink's retry, or by the client's own
      // resend of its unconfirmed messages on reconnect — and arrives twice, with the same id.
      expect(duplicates).toBeGreaterThanOrEqual(0);
    });
  });
});

describe('ClientProxySink: NATS JetStream (acked, deduplicated by Nats-Msg-Id) and Redis with no subscriber', () => {
  failOnUnhandledRejection();
  const nats = cases.find((c) => c.broker === 'nats')!;
  const redis = cases.find((c) => c.broker === 'redis')!;
  let nc: NatsConnection | undefined;
  let consumer: INestMicroservice | undefined;
  let app: ProducerApp | undefined;
  const stream = `${RUN.replace(/[^A-Za-z0-9_-]/g, '_')}_orders`;

  afterEach(async () => {
    await app?.started.close();
    await consumer?.close();
    if (nc) {
      await nc.request(`$JS.API.STREAM.DELETE.${stream}`, '', { timeout: 2000 }).catch(() => undefined);
      await nc.close();
    }
    app = undefined;
    consumer = undefined;
    nc = undefined;
  });

  const streamMessages = async () => {
    const info = (await nc!.request(`$JS.API.STREAM.INFO.${stream}`, '', { timeout: 2000 })).json<{ state?: { messages: number }; error?: unknown }>();
    if (!info.state) throw new Error(`no stream info: ${JSON.stringify(info)}`);
    return info.state.messages;
  };

  it('counts a message delivered only on the stream\'s ack; a repeated jobId is stored once (JetStream dedupe)', async () => {
    nc = await natsConnect({ servers: ['nats://127.0.0.1:4222'] });
    const created = (
      await nc.request(`$JS.API.STREAM.CREATE.${stream}`, JSON.stringify({ name: stream, subjects: [PATTERN], storage: 'memory', duplicate_window: 120_000_000_000 }), { timeout: 5000 })
    ).json<{ error?: { description: string } }>();
    if (created.error) throw new Error(`JetStream stream not created: ${created.error.description} (is nats-server running with -js?)`);
    resetConsumed();
    consumer = await startConsumer(nats);
    app = await startProducer(platforms[0], nats, { sink: { nats: { jetStream: true } } });
    expect(app.sink.describe()).toMatchObject({ transport: 'nats', confirmed: true });

    const ids = range(0, 80).map(String);
    const statuses = await load(app.started.url, [...ids, ...ids.slice(0, 20)].map((id) => `/order/${id}`), 10);
    expect(statuses.every((s) => s === 200)).toBe(true);
    if (!(await app.work.flush(10_000))) throw notFlushed(app);
    expect(sinkStats(app.work.stats())).toMatchObject({ accepted: 100, delivered: 100, pending: 0, deadLettered: 0 });
    expect(await streamMessages()).toBe(80); // the 20 repeated ids were acked as duplicates, not stored again
    await eventually(() => expect(consumed.runs.size).toBe(80), 10_000);
  });

  it('a JetStream publish no stream captures is not counted delivered: it fails, saying to add the subject to a stream', async () => {
    resetConsumed();
    app = await startProducer(platforms[0], nats, { sink: { nats: { jetStream: true } }, deferred: { sinkOptions: { [SINK]: { maxAttempts: 2, initialBackoffMs: 10 } } } });
    expect((await load(app.started.url, ['/order/x'], 1))[0]).toBe(200);
    await eventually(() => expect(sinkStats(app!.work.stats())).toMatchObject({ accepted: 1, delivered: 0, deadLettered: 1 }), 10_000);
    expect(sinkStats(app.work.stats()).lastError).toMatch(/no JetStream stream captures/);
  });

  it('Redis: a PUBLISH that reached no subscriber is retried (not counted), and delivered once a subscriber is there', async () => {
    resetConsumed();
    app = await startProducer(platforms[1], redis, { deferred: { sinkOptions: { [SINK]: { maxAttempts: 200, initialBackoffMs: 20, maxBackoffMs: 50 } } } });
    expect((await load(app.started.url, range(0, 10).map((i) => `/order/${i}`), 5)).every((s) => s === 200)).toBe(true);
    await eventually(() => expect(sinkStats(app!.work.stats()).failedWrites).toBeGreaterThan(0), 5000);
    expect(sinkStats(app.work.stats())).toMatchObject({ accepted: 10, delivered: 0, pending: 10 });
    expect(sinkStats(app.work.stats()).lastError).toMatch(/reached 0 subscribers/);
    consumer = await startConsumer(redis);
    if (!(await app.work.flush(10_000))) throw notFlushed(app);
    expect(sinkStats(app.work.stats())).toMatchObject({ accepted: 10, delivered: 10, pending: 0, deadLettered: 0 });
    await eventually(() => expect(consumed.total).toBe(10), 5000);
    expect(consumed.runs.size).toBe(10);
  });

  it('MQTT at QoS 0 and core NATS say confirmed: false', async () => {
    const mqtt = cases.find((c) => c.broker === 'mqtt')!;
    app = await startProducer(platforms[0], mqtt, { sink: { mqtt: { qos: 0 } } });
    expect(app.sink.confirmed).toBe(false);
    expect(app.sink.describe().delivered).toMatch(/QoS 0/);
    await app.started.close();
    app = await startProducer(platforms[0], nats);
    expect(app.sink.describe()).toMatchObject({ confirmed: false, delivered: expect.stringMatching(/core NATS/) });
  });
});
