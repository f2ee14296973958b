import { errorMessage } from '../../core/error-message';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { internals } from './client-internals';
import { MESSAGE_ID_HEADER } from './client-proxy-sink.options';
import type { Transport, TransportContext } from './transport.interface';
import { emitted, refusing, withPayloadId } from './transport-send';

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

/**
 * A broker's refusal of one MQTT message (its PUBACK / PUBREC reason code, 0x80 or more, carried by
 * mqtt.js's error), with the code written as MQTT writes it (`0x87`): for good for the codes of
 * `MQTT_REFUSALS`, retryable for the others (`0x97` quota exceeded, …). `undefined` for any other error.
 */
export function mqttRefusal(error: unknown): SinkWriteError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'number' || code < 0x80 || code > 0xff) return undefined;
  const why = MQTT_REFUSALS.get(code);
  if (why === undefined) return new SinkWriteError(`MQTT: the broker refused the message (reason code 0x${code.toString(16)}, for now: it is retried): ${errorMessage(error)}`, { code: `0x${code.toString(16)}`, cause: error });
  return new SinkWriteError(`MQTT: the broker refused the message (reason code 0x${(code as number).toString(16)}: ${why}): ${errorMessage(error)}`, {
    retryable: false,
    code: `0x${(code as number).toString(16)}`,
    cause: error,
  });
}

/** `ClientMqtt`: `emit` at QoS 1 (default) resolves on the PUBACK; QoS 0 on the write to the socket. */
export function mqttTransport(ctx: TransportContext): Transport {
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
        return refusing(emitted(ctx.client, m.pattern, builder.build(), ctx.records), mqttRefusal);
      });
    },
  };
}
