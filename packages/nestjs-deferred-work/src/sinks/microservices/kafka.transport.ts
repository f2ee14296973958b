import { internals } from './client-internals';
import { MESSAGE_ID_HEADER } from './client-proxy-sink.options';
import type { Transport, TransportContext } from './transport.interface';
import { emitted, withPayloadId } from './transport-send';

/** `ClientKafka`: one `emitBatch` (one `producer.send`) per topic per batch; resolves on the producer's ack (`acks: -1`, all in-sync replicas, by default). */
export function kafkaTransport(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  return {
    transport: 'kafka',
    confirmed: true,
    delivered: "the Kafka producer's send resolved: acked by the partition leader and, with the default acks = -1, by every in-sync replica",
    messageId: `the Kafka header "${MESSAGE_ID_HEADER}" (context.getMessage().headers)`,
    state() {
      return c._producer ? 'up' : 'unconnected';
    },
    send(messages) {
      const byTopic = new Map<string, number[]>();
      messages.forEach((m, i) => {
        const list = byTopic.get(m.pattern);
        if (list) list.push(i);
        else byTopic.set(m.pattern, [i]);
      });
      const results: Array<Promise<void>> = new Array(messages.length);
      for (const [topic, indexes] of byTopic) {
        const kafkaMessages = indexes.map((i) => ({ value: withPayloadId(messages[i].data, ctx.payloadIdKey, messages[i].id), headers: { [MESSAGE_ID_HEADER]: messages[i].id } }));
        const sent =
          typeof c.emitBatch === 'function'
            ? new Promise<void>((resolve, reject) => c.emitBatch!.call(ctx.client, topic, { messages: kafkaMessages }).subscribe({ error: reject, complete: () => resolve() }))
            : Promise.all(kafkaMessages.map((message) => emitted(ctx.client, topic, message))).then(() => undefined);
        sent.catch(() => undefined);
        for (const i of indexes) results[i] = sent;
      }
      return results;
    },
  };
}
