import { Transport } from '@nestjs/microservices';
import { type Consumer, Kafka, logLevel, Partitioners } from 'kafkajs';
import { describeBrokerConformance } from '../support/broker-conformance';
import { KafkaMock } from '../support/kafka-mock';

/**
 * ClientProxySink over Kafka: a `ClientKafka` (producer only, kafkajs, acks = -1) registered with
 * ClientsModule, against librdkafka's mock cluster (3 brokers, run by kcat: test/support/kafka-mock.ts).
 * The consumer is one kafkajs consumer group for the file, subscribed to every test's topic (joining
 * a group takes seconds; once is enough); `received()` waits until it has read each partition of the
 * test's topic up to the high watermark the cluster reports, so it returns everything the cluster
 * holds, each message as many times as it was written.
 *
 * The cut and the black hole are both a pause of the whole cluster (SIGSTOP, then SIGCONT): a Kafka
 * client connects, after the bootstrap, to the brokers the metadata names, so a proxy in front of
 * the bootstrap address would not cut it; and a restarted mock is a new, empty cluster. A pause
 * leaves the connections open and unanswered, so a write times out while its send stays in flight;
 * the sink's retry waits for that same send (or, confirmed by then, counts it delivered) rather than
 * sending again, and kafkajs does not resend on its own within its request timeout (30 s): no
 * duplicates are expected. (Before the sink counted a send confirmed after its write's timeout, the
 * sends in flight at the pause were each written twice.)
 *
 * No `poison`: the mock cluster reproduces no refusal of one message alone; a real broker's
 * (MESSAGE_TOO_LARGE over `message.max.bytes`) is not tested here.
 */
const RUN = `dw-conf-kafka-${process.pid}-${Date.now().toString(36)}`;
/** One topic per test: 5 cases × 2 adapters. */
const TOPICS = Array.from({ length: 10 }, (_, i) => `${RUN}-${i + 1}`);
const cluster = new KafkaMock(3);
let kafka: Kafka | undefined;
let consumer: Consumer | undefined;
/** Per topic: the marks read, and per partition the next offset to read. */
const read = new Map<string, { marks: string[]; next: Map<number, bigint> }>(TOPICS.map((t) => [t, { marks: [], next: new Map() }]));

/** Waits until the consumer has read `topic` up to the high watermark of each of its partitions. */
async function caughtUp(topic: string, timeoutMs = 15_000): Promise<void> {
  const admin = kafka!.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    const offsets = await admin.fetchTopicOffsets(topic);
    const behind = () => offsets.filter((p) => (read.get(topic)!.next.get(p.partition) ?? 0n) < BigInt(p.high));
    while (behind().length > 0) {
      if (Date.now() > deadline) throw new Error(`the consumer has not read ${topic} up to ${JSON.stringify(offsets)} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    await admin.disconnect();
  }
}

describeBrokerConformance({
  name: 'ClientProxySink over Kafka',
  transport: Transport.KAFKA,
  setUp: async () => {
    await cluster.start();
    kafka = new Kafka({ clientId: 'conformance-consumer', brokers: cluster.brokers, logLevel: logLevel.NOTHING });
    // the topics exist (auto-created by a metadata request) before the group subscribes to them
    const admin = kafka.admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: TOPICS });
    await admin.disconnect();
    consumer = kafka.consumer({ groupId: `${RUN}-group` });
    await consumer.connect();
    await consumer.subscribe({ topics: TOPICS, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const got = read.get(topic)!;
        // ClientKafka writes the event's data alone as the value (the pattern is the topic)
        if (message.value) got.marks.push(String((JSON.parse(message.value.toString('utf8')) as { mark?: unknown }).mark));
        got.next.set(partition, BigInt(message.offset) + 1n);
      },
    });
    return 0;
  },
  tearDown: async () => {
    await consumer?.disconnect();
    await cluster.stop();
  },
  open: async (n) => {
    const topic = TOPICS[n - 1];
    if (!topic) throw new Error(`test ${n}: only ${TOPICS.length} topics were made; add more to TOPICS`);
    return {
      pattern: topic,
      clientOptions: () => ({
        client: { clientId: `conformance-${n}`, brokers: cluster.brokers, logLevel: logLevel.NOTHING },
        producer: { createPartitioner: Partitioners.DefaultPartitioner },
        producerOnlyMode: true,
      }),
      received: async () => {
        await caughtUp(topic);
        return [...read.get(topic)!.marks];
      },
      close: async () => undefined,
    };
  },
  link: {
    stop: () => cluster.pause(),
    start: () => cluster.resume(),
    get running() {
      return cluster.running;
    },
    blackhole: { on: () => cluster.pause(), off: () => cluster.resume() },
  },
  duplicatesInOutage: false,
  // the pause answers nothing: a send cut short by writeTimeoutMs (ETIMEDOUT), or kafkajs's own request timeout / lost connection
  outageCodes: ['ETIMEDOUT', 'ENOTCONN', 'ECONNRESET'],
  // the paused cluster answers nothing: each try ends at writeTimeoutMs, so a shorter one lets 1.5 s of budget run out in seconds
  shortBudgetOptions: { writeTimeoutMs: 1000 },
});
