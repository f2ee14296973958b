import { Transport } from '@nestjs/microservices';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { emitEvent } from 'nestjs-deferred-work/microservices';
import { describeBrokerConformance, markOf, TOKEN } from '../support/broker-conformance';
import { requireBroker } from '../support/tcp-proxy';

/**
 * ClientProxySink over core NATS (the machine's nats-server on 127.0.0.1:4222): a `ClientNats`
 * registered with ClientsModule, through a TCP proxy; the consumer is a subscription on the test's
 * subject, on its own connection straight to the server. `received()` flushes that connection first:
 * the server answers the PING after every message it routed to it before.
 *
 * Duplicates in an outage: documented (docs/sinks/microservices.md, "At least once": a message whose
 * batch's flush was lost in the cut is sent again by the sink's retry).
 *
 * Poison: an event whose message is over the server's `max_payload` (1 MiB, from its INFO). Its item
 * is within `maxItemBytes` (1 MiB) — Nest's `{ pattern, data }` envelope and the id header push the
 * message over. The client refuses to publish it (the server would end the connection over it), and
 * only it.
 */
const RUN = `dw-conf-nats-${process.pid}-${Date.now().toString(36)}`;
const MAX_ITEM_BYTES = 1_048_576; // DeferredWorkModule's default maxItemBytes
let nc: NatsConnection | undefined;
let maxPayload = 0;

describeBrokerConformance({
  name: 'ClientProxySink over core NATS',
  transport: Transport.NATS,
  setUp: async () => {
    await requireBroker('NATS', 4222, 'start nats-server with JetStream (nats-server -a 127.0.0.1 -p 4222 -js).');
    nc = await connect({ servers: ['nats://127.0.0.1:4222'] });
    maxPayload = nc.info!.max_payload;
    if (maxPayload > MAX_ITEM_BYTES) {
      throw new Error(`The NATS server's max_payload (${maxPayload}) is over maxItemBytes (${MAX_ITEM_BYTES}): no item the module accepts can be over it. Run nats-server with its default max_payload (1 MiB).`);
    }
    return 4222;
  },
  tearDown: async () => {
    await nc?.close();
  },
  open: async (n) => {
    const subject = `${RUN}.${n}`;
    const got: string[] = [];
    const sub = nc!.subscribe(subject, { callback: (error, msg) => void (error || got.push(markOf(msg.data))) });
    await nc!.flush(); // the subscription is known to the server before anything is published
    return {
      pattern: subject,
      clientOptions: (port) => ({ servers: [`nats://127.0.0.1:${port}`], reconnectTimeWait: 100, maxReconnectAttempts: -1 }),
      received: async () => {
        await nc!.flush();
        return [...got];
      },
      close: async () => {
        sub.unsubscribe();
      },
    };
  },
  poison: (work, channel, mark) => {
    // data whose JSON is 32 bytes under maxItemBytes (room for the options, `{"sink":"CONF_EVENTS"}`)
    const pad = 'x'.repeat(MAX_ITEM_BYTES - 32 - JSON.stringify({ mark, pad: '' }).length);
    emitEvent(work, TOKEN, channel.pattern, { mark, pad });
  },
  duplicatesInOutage: true,
  // ENOTCONN: the sink's own "not connected; not sending"; ETIMEDOUT: a send cut short by writeTimeoutMs; ECONNRESET: the cut itself
  outageCodes: ['ENOTCONN', 'ETIMEDOUT', 'ECONNRESET'],
});
