import { Transport } from '@nestjs/microservices';
import mqtt, { type MqttClient } from 'mqtt';
import { emitEvent } from 'nestjs-deferred-work/microservices';
import { describeBrokerConformance, markOf, TOKEN } from '../support/broker-conformance';
import { requireBroker } from '../support/tcp-proxy';

/**
 * ClientProxySink over MQTT 5 at QoS 1 (the machine's Mosquitto on 127.0.0.1:1883): a `ClientMqtt`
 * registered with ClientsModule, through a TCP proxy; the consumer is a QoS 1 subscription on the
 * test's topic, on its own connection straight to the broker. `received()` first publishes a sentinel
 * on that topic and waits for it to come back: the broker queued it behind every message it took before.
 *
 * Duplicates in an outage: documented (docs/sinks/microservices.md, "At least once": mqtt.js re-sends
 * the QoS 1 messages whose PUBACK was lost in the cut).
 *
 * Poison: an event for a topic under `$SYS/`: Mosquitto refuses every client's PUBLISH there (its ACL
 * check denies writes to `$SYS`), and at MQTT 5 says so in that message's PUBACK (0x87, not
 * authorized); the connection and the other messages go on.
 */
const RUN = `dw-conf-mqtt-${process.pid}-${Date.now().toString(36)}`;
const SENTINEL = '__received__';
let subscriber: MqttClient | undefined;
const received = new Map<string, string[]>();
const sentinels = new Map<string, () => void>();

describeBrokerConformance({
  name: 'ClientProxySink over MQTT',
  transport: Transport.MQTT,
  setUp: async () => {
    await requireBroker('MQTT', 1883, 'start mosquitto on 127.0.0.1:1883 (mosquitto -d).');
    const client = mqtt.connect('mqtt://127.0.0.1:1883', { protocolVersion: 5, reconnectPeriod: 100 });
    subscriber = client;
    client.on('error', () => undefined);
    client.on('message', (topic, payload) => {
      const text = payload.toString('utf8');
      if (text.startsWith(SENTINEL)) sentinels.get(text)?.();
      else received.get(topic)?.push(markOf(text));
    });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    return 1883;
  },
  tearDown: async () => {
    await subscriber?.endAsync();
  },
  open: async (n) => {
    const topic = `${RUN}/${n}`;
    const got: string[] = [];
    received.set(topic, got);
    await subscriber!.subscribeAsync(topic, { qos: 1 });
    let syncs = 0;
    return {
      pattern: topic,
      clientOptions: (port) => ({ url: `mqtt://127.0.0.1:${port}`, protocolVersion: 5, reconnectPeriod: 100 }),
      received: async () => {
        const sentinel = `${SENTINEL}${topic}#${++syncs}`;
        const back = new Promise<void>((resolve) => sentinels.set(sentinel, resolve));
        await subscriber!.publishAsync(topic, sentinel, { qos: 1 });
        await back;
        sentinels.delete(sentinel);
        return [...got];
      },
      close: async () => {
        await subscriber!.unsubscribeAsync(topic);
        received.delete(topic);
      },
    };
  },
  poison: (work, channel, mark) => emitEvent(work, TOKEN, `$SYS/${channel.pattern}`, { mark }),
  duplicatesInOutage: true,
  // ENOTCONN: the sink's own "not connected; not sending"; ETIMEDOUT: a send cut short by writeTimeoutMs; ECONNRESET: the cut itself
  outageCodes: ['ENOTCONN', 'ETIMEDOUT', 'ECONNRESET'],
});
