import { Controller, Get, type INestMicroservice, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, KafkaContext, Payload, Transport } from '@nestjs/microservices';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { ClientProxySink, emitEvent, MESSAGE_ID_HEADER } from 'nestjs-deferred-work/microservices';
import { eventually } from '../support/eventually';
import { KafkaMock } from '../support/kafka-mock';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';

/**
 * What ClientProxySink produces to Kafka (a `ClientKafka`, producer only, against librdkafka's mock
 * cluster run by kcat: test/support/kafka-mock.ts), read by a Nest microservice — `Transport.KAFKA`
 * (`ServerKafka`, a kafkajs consumer group) with an `@EventPattern(topic)` handler — in a separate Nest
 * app of the same process, as a Nest user would read it: `@Payload()` is the emitted data, and
 * `KafkaContext.getMessage().headers` carries the message's stable id (`dw-message-id`, the item id).
 * N requests on Express and on Fastify → N handler calls, each event once.
 */
failOnUnhandledRejection();
const TOPIC = `dw-nest-consumer-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = 'KAFKA_EVENTS';
const cluster = new KafkaMock(3);

/** What the handler was called with, one entry per call. */
const calls: Array<{ payload: { mark: string }; headers: Record<string, unknown>; topic: string; partition: number }> = [];

@Controller()
class OrdersConsumer {
  @EventPattern<string>(TOPIC) // a plain pattern (not the typed event map of Nest 12)
  placed(@Payload() payload: { mark: string }, @Ctx() context: KafkaContext) {
    calls.push({ payload, headers: context.getMessage().headers as Record<string, unknown>, topic: context.getTopic(), partition: context.getPartition() });
  }
}

@Module({ controllers: [OrdersConsumer] })
class ConsumerModule {}

@Controller()
class OrdersController {
  @Get('orders/:mark')
  @AfterResponse()
  place(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    emitEvent(work, TOKEN, TOPIC, { mark });
    return { mark };
  }
}

let consumer: INestMicroservice | undefined;

beforeAll(async () => {
  await cluster.start();
  // the topic exists (auto-created by a metadata request) before the group subscribes to it
  const admin = new Kafka({ clientId: 'nest-consumer-admin', brokers: cluster.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.fetchTopicMetadata({ topics: [TOPIC] });
  await admin.disconnect();
  consumer = await NestFactory.createMicroservice(ConsumerModule, {
    transport: Transport.KAFKA,
    options: {
      client: { clientId: 'orders-consumer', brokers: cluster.brokers, logLevel: logLevel.NOTHING },
      consumer: { groupId: `${TOPIC}-group` },
      subscribe: { fromBeginning: true },
    },
    logger: false,
  });
  await consumer.listen();
}, 60_000);

afterAll(async () => {
  await consumer?.close();
  await cluster.stop();
});

describe.each(platforms)('ClientProxySink to Kafka, read by a Nest microservice ($name)', (platform) => {
  it('N requests → N @EventPattern handler calls: @Payload() is the emitted data, the dw-message-id header distinct per event', async () => {
    const sink = new ClientProxySink({ clientToken: TOKEN });
    const started = await startApp(platform, {
      imports: [
        ClientsModule.register([
          {
            name: TOKEN,
            transport: Transport.KAFKA,
            options: {
              client: { clientId: `orders-${platform.name}`, brokers: cluster.brokers, logLevel: logLevel.NOTHING },
              producer: { createPartitioner: Partitioners.DefaultPartitioner },
              producerOnlyMode: true,
            },
          },
        ]),
        DeferredWorkModule.forRoot({ sinks: [sink], sinkOptions: { [sink.name]: { flushIntervalMs: 5 } } }),
      ],
      controllers: [OrdersController],
    });
    const work = started.app.get(DeferredWork);
    try {
      const marks = range(0, 60).map((i) => `${platform.name}-${i}`);
      expect((await load(started.url, marks.map((m) => `/orders/${m}`), 5)).every((s) => s === 200)).toBe(true);
      await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ accepted: 60, delivered: 60, pending: 0, deadLettered: 0 }), 15_000);
      const mine = () => calls.filter((c) => c.payload.mark.startsWith(`${platform.name}-`));
      await eventually(() => expect(mine().length).toBeGreaterThanOrEqual(60), 30_000, 20);
      await new Promise((resolve) => setTimeout(resolve, 300)); // a late copy would show up now
      const got = mine();
      expect(got.map((c) => c.payload.mark).sort()).toEqual([...marks].sort()); // each once
      expect(got.every((c) => c.topic === TOPIC)).toBe(true);
      const ids = got.map((c) => c.headers[MESSAGE_ID_HEADER]);
      expect(ids.every((id) => typeof id === 'string' && /^dw-/.test(id))).toBe(true); // decoded to a string by ServerKafka's parser
      expect(new Set(ids).size).toBe(60);
      expect(got[0].payload).toEqual({ mark: got[0].payload.mark }); // the data alone: no envelope
    } finally {
      await started.close();
    }
  }, 60_000);
});
