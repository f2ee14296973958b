import { createRequire } from 'node:module';
import { Transport } from '@nestjs/microservices';
import { describeBrokerConformance, markOf } from '../support/broker-conformance';
import { requireBroker } from '../support/tcp-proxy';

/**
 * ClientProxySink over RabbitMQ (the machine's broker on 127.0.0.1:5672): a `ClientRMQ` registered
 * with ClientsModule, through a TCP proxy; the consumer reads the test's queue straight from the
 * broker with basic.get until it is empty (what the queue holds now, each message once).
 *
 * Duplicates in an outage: documented (docs/sinks/microservices.md, "At least once"):
 * amqp-connection-manager re-publishes the messages whose confirm was lost in the cut.
 *
 * No `poison`: RabbitMQ has no refusal of one message alone that says why. Within `maxItemBytes`
 * (1 MiB) nothing is over its `max_message_size` (128 MiB), and the refusals that name a reason
 * (406 message too large, 403 access refused) close the whole channel, failing every message in
 * flight on it. The one per-message refusal, a basic.nack (`x-overflow: reject-publish`), carries no
 * reason and means "the queue is full, try later" as well — rightly retried, not dead-lettered.
 */
interface AmqpChannel {
  assertQueue(queue: string, options: object): Promise<unknown>;
  get(queue: string, options: { noAck: boolean }): Promise<false | { content: Buffer }>;
  deleteQueue(queue: string): Promise<unknown>;
}
interface AmqpConnection {
  createChannel(): Promise<AmqpChannel>;
  close(): Promise<void>;
  on(event: 'error', listener: (error: unknown) => void): unknown;
}
const amqp = createRequire(import.meta.url)('amqplib') as { connect(url: string): Promise<AmqpConnection> };

const RUN = `dw-conf-rmq-${process.pid}-${Date.now().toString(36)}`;
const BROKER = 'amqp://guest:guest@127.0.0.1:5672';
// Not durable; dropped by RabbitMQ 10 minutes after its last use should the test not get to delete it.
const QUEUE_OPTIONS = { durable: false, arguments: { 'x-expires': 600_000 } };
let connection: AmqpConnection | undefined;

describeBrokerConformance({
  name: 'ClientProxySink over RabbitMQ',
  transport: Transport.RMQ,
  setUp: async () => {
    await requireBroker('RabbitMQ', 5672, 'start RabbitMQ (rabbitmq-server -detached; guest/guest on 127.0.0.1:5672).');
    connection = await amqp.connect(BROKER);
    connection.on('error', () => undefined);
    return 5672;
  },
  tearDown: async () => {
    await connection?.close();
  },
  open: async (n) => {
    const queue = `${RUN}-${n}`;
    const channel = await connection!.createChannel();
    await channel.assertQueue(queue, QUEUE_OPTIONS);
    const got: string[] = [];
    return {
      pattern: 'conformance.item',
      clientOptions: (port) => ({
        urls: [`amqp://guest:guest@127.0.0.1:${port}`],
        queue,
        queueOptions: QUEUE_OPTIONS,
        // reconnect quickly after the cut, and notice a dead link within seconds
        socketOptions: { reconnectTimeInSeconds: 0.1, heartbeatIntervalInSeconds: 1 },
      }),
      received: async () => {
        for (let message = await channel.get(queue, { noAck: true }); message; message = await channel.get(queue, { noAck: true })) got.push(markOf(message.content));
        return [...got];
      },
      close: async () => {
        await channel.deleteQueue(queue);
      },
    };
  },
  duplicatesInOutage: true,
  // ENOTCONN: the sink's own "not connected; not sending"; ETIMEDOUT: a send cut short by writeTimeoutMs; ECONNRESET: the cut itself
  outageCodes: ['ENOTCONN', 'ETIMEDOUT', 'ECONNRESET'],
});
