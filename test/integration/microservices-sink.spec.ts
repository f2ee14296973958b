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
