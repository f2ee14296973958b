import { internals } from './client-internals';
import { MESSAGE_ID_HEADER } from './client-proxy-sink.options';
import type { Transport, TransportContext } from './transport.interface';
import { emitted, withPayloadId } from './transport-send';

/** A kafkajs producer, as far as the transport uses it (`sendBatch`: one Produce request per broker for every topic). */
interface BatchProducer {
  sendBatch(batch: { topicMessages: Array<{ topic: string; messages: unknown[] }> } & object): Promise<unknown>;
}

/** What the transport reads of `ClientKafka` besides the common internals: the send options the app gave it. */
interface KafkaClientLike {
  options?: { send?: object };
}

/**
 * `ClientKafka`: the whole batch in one `producer.sendBatch` (one Produce request per broker, across
 * topics) on the client's own kafkajs producer, each message through the client's serializer and with
 * its `send` options (`acks: -1`, all in-sync replicas, by default). Should the batch be refused, and
 * it spans several topics, each topic is sent on its own (`emitBatch`), so one topic's refusal fails
 * only its items. A client without these internals: one `emitBatch` per topic.
 */
export function kafkaTransport(ctx: TransportContext): Transport {
  const c = internals(ctx.client);
  const sendOptions = () => (ctx.client as unknown as KafkaClientLike).options?.send ?? {};
  const perTopic = (topic: string, messages: unknown[]): Promise<void> =>
    typeof c.emitBatch === 'function'
      ? new Promise<void>((resolve, reject) => c.emitBatch!.call(ctx.client, topic, { messages }).subscribe({ error: reject, complete: () => resolve() }))
      : Promise.all(messages.map((message) => emitted(ctx.client, topic, message, ctx.records))).then(() => undefined);
  return {
    transport: 'kafka',
    confirmed: true,
    messagesPerSend: Number.POSITIVE_INFINITY,
    delivered: "the Kafka producer's send resolved: acked by the partition leader and, with the default acks = -1, by every in-sync replica",
    messageId: `the Kafka header "${MESSAGE_ID_HEADER}" (context.getMessage().headers)`,
    state() {
      return producerOf(c) ? 'up' : 'unconnected';
    },
    send(messages) {
      const byTopic = new Map<string, number[]>();
      messages.forEach((m, i) => {
        const list = byTopic.get(m.pattern);
        if (list) list.push(i);
        else byTopic.set(m.pattern, [i]);
      });
      const kafkaMessages = (indexes: number[]) =>
        indexes.map((i) => ({ value: withPayloadId(messages[i].data, ctx.payloadIdKey, messages[i].id), headers: { [MESSAGE_ID_HEADER]: messages[i].id } }));
      const results: Array<Promise<void>> = new Array(messages.length);
      const producer = producerOf(c) as Partial<BatchProducer> | undefined;
      const serializer = c.serializer;
      if (typeof producer?.sendBatch === 'function' && serializer && typeof c.normalizePattern === 'function') {
        const topics = [...byTopic];
        const whole = Promise.resolve().then(async () => {
          const topicMessages = topics.map(([topic, indexes]) => {
            const name = c.normalizePattern!(topic);
            return { topic: name, messages: kafkaMessages(indexes).map((m): unknown => serializer.serialize(m, { pattern: name })) };
          });
          // Nest awaits a serializer (it may be async, e.g. a schema registry's): so does this.
          // every topic's at once, so that no serializer's rejection is left without a handler
          if (topicMessages.some((t) => t.messages.some(isThenable))) {
            await Promise.all(topicMessages.map(async (t) => void (t.messages = await Promise.all(t.messages))));
          }
          return producer.sendBatch!({ ...sendOptions(), topicMessages });
        });
        for (const [topic, indexes] of topics) {
          const sent = whole.then(
            () => undefined,
            (error: unknown) => (topics.length > 1 ? perTopic(topic, kafkaMessages(indexes)) : Promise.reject(error)),
          );
          sent.catch(() => undefined);
          for (const i of indexes) results[i] = sent;
        }
        return results;
      }
      for (const [topic, indexes] of byTopic) {
        const sent = perTopic(topic, kafkaMessages(indexes));
        sent.catch(() => undefined);
        for (const i of indexes) results[i] = sent;
      }
      return results;
    },
  };
}

/** Whether a value is a promise (or any thenable). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/** The client's kafkajs producer once connected: `_producer` on Nest 11 and later, `producer` on Nest 10. */
function producerOf(c: { _producer?: unknown; producer?: unknown }): unknown {
  if (c._producer) return c._producer;
  try {
    return c.producer ?? undefined; // Nest 11's getter throws before connect()
  } catch {
    return undefined;
  }
}
