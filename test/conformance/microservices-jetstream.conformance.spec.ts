import { Transport } from '@nestjs/microservices';
import { connect, createInbox, type NatsConnection } from '@nats-io/transport-node';
import { emitEvent } from 'nestjs-deferred-work/microservices';
import { describeBrokerConformance, markOf, TOKEN } from '../support/broker-conformance';
import { requireBroker } from '../support/tcp-proxy';

/**
 * ClientProxySink over NATS JetStream (`nats: { jetStream: true }`; the machine's nats-server with
 * -js on 127.0.0.1:4222): a `ClientNats` registered with ClientsModule, through a TCP proxy; each test
 * gets its own memory stream capturing its subject, and `received()` reads the whole stream with a
 * pull consumer of its own (ack none, deliver all), on a connection straight to the server.
 *
 * No duplicates allowed in an outage: the docs say JetStream drops a second message with the same
 * Nats-Msg-Id inside the stream's duplicate window (2 minutes here), and each message carries the
 * item's stable id.
 *
 * Poison: an event over the stream's `max_msg_size` (4 KiB here): JetStream refuses that message alone
 * (its ack says 400, "message size exceeds maximum allowed", err_code 10054).
 */
const RUN = `dw-conf-js-${process.pid}-${Date.now().toString(36)}`;
const STREAM = `DW_CONF_JS_${process.pid}_${Date.now().toString(36)}`;
const MAX_MSG_SIZE = 4096;
let nc: NatsConnection | undefined;

async function api<T extends { error?: { code?: number; description?: string } }>(subject: string, body: unknown): Promise<T> {
  const reply = (await nc!.request(subject, JSON.stringify(body ?? {}), { timeout: 5000 })).json<T>();
  if (reply.error) throw new Error(`${subject}: ${reply.error.description} (${reply.error.code}) — is nats-server running with -js?`);
  return reply;
}

/** Every message the stream holds, by a pull consumer made for this read (no acks: it only reads). */
async function readStream(stream: string): Promise<string[]> {
  const consumer = await api<{ name: string; error?: { code?: number; description?: string } }>(`$JS.API.CONSUMER.CREATE.${stream}`, {
    stream_name: stream,
    config: { ack_policy: 'none', deliver_policy: 'all', inactive_threshold: 60_000_000_000 },
  });
  const inbox = createInbox();
  const sub = nc!.subscribe(inbox, { timeout: 5000 });
  const marks: string[] = [];
  try {
    nc!.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer.name}`, JSON.stringify({ batch: 10_000, no_wait: true }), { reply: inbox });
    for await (const msg of sub) {
      if (msg.data.length === 0 && msg.headers) break; // the status that ends the pull: 404 no messages, 408 the request is done
      marks.push(markOf(msg.data));
    }
  } finally {
    sub.unsubscribe();
    await api(`$JS.API.CONSUMER.DELETE.${stream}.${consumer.name}`, {}).catch(() => undefined);
  }
  return marks;
}

describeBrokerConformance({
  name: 'ClientProxySink over NATS JetStream',
  transport: Transport.NATS,
  sink: { nats: { jetStream: true } },
  setUp: async () => {
    await requireBroker('NATS', 4222, 'start nats-server with JetStream (nats-server -a 127.0.0.1 -p 4222 -js).');
    nc = await connect({ servers: ['nats://127.0.0.1:4222'] });
    return 4222;
  },
  tearDown: async () => {
    await nc?.close();
  },
  open: async (n) => {
    const subject = `${RUN}.${n}`;
    const stream = `${STREAM}_${n}`;
    await api(`$JS.API.STREAM.CREATE.${stream}`, { name: stream, subjects: [subject], storage: 'memory', duplicate_window: 120_000_000_000, max_msg_size: MAX_MSG_SIZE });
    return {
      pattern: subject,
      clientOptions: (port) => ({ servers: [`nats://127.0.0.1:${port}`], reconnectTimeWait: 100, maxReconnectAttempts: -1 }),
      received: () => readStream(stream),
      close: async () => {
        await api(`$JS.API.STREAM.DELETE.${stream}`, {});
      },
    };
  },
  poison: (work, channel, mark) => emitEvent(work, TOKEN, channel.pattern, { mark, pad: 'x'.repeat(2 * MAX_MSG_SIZE) }),
  duplicatesInOutage: false,
  // ENOTCONN: the sink's own "not connected; not sending"; ETIMEDOUT: an ack not back within ackTimeoutMs, or writeTimeoutMs; ECONNRESET: the cut itself
  outageCodes: ['ENOTCONN', 'ETIMEDOUT', 'ECONNRESET'],
});
