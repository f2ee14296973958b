import { internals } from './client-internals';
import { MESSAGE_ID_HEADER } from './client-proxy-sink.options';
import type { Transport, TransportContext } from './transport.interface';
import { emitted } from './transport-send';
import { checkKafkaEvent, kafkaMessageOf, kafkaRefusal, missingPartition, refusedMessage } from './kafka-messages';
import type { SinkWriteError } from '../../core/errors/sink-write.error';

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
 * its `send` options (`acks: -1`, all in-sync replicas, by default). An event's data in Nest's Kafka
 * message shape (`{ key, value, headers, partition, timestamp }`) is written as `ClientKafka.emit`
 * writes it, the stable id added to its headers; other data is the value. A serialized message kafkajs
 * cannot write (it would throw for the whole batch, or drop it silently) fails alone, for good; so does
 * one for a partition the topic does not have (kafkajs drops it and resolves). Should the batch be
 * refused, and it spans several topics, each topic is sent on its own (`emitBatch`), so one topic's
 * refusal fails only its items. A client without these internals: one `emitBatch` per topic.
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
    validate(data) {
      // With Nest's own serializer what reaches kafkajs is known now; a custom one's output is checked at the write.
      checkKafkaEvent(data, isNestSerializer(c.serializer));
    },
    send(messages) {
      const byTopic = new Map<string, number[]>();
      messages.forEach((m, i) => {
        const list = byTopic.get(m.pattern);
        if (list) list.push(i);
        else byTopic.set(m.pattern, [i]);
      });
      const messageOf = (i: number) => kafkaMessageOf(messages[i].data, ctx.payloadIdKey, messages[i].id);
      const results: Array<Promise<void>> = new Array(messages.length);
      const producer = producerOf(c) as Partial<BatchProducer> | undefined;
      const serializer = c.serializer;
      if (typeof producer?.sendBatch === 'function' && serializer && typeof c.normalizePattern === 'function') {
        const topics = [...byTopic];
        /** Per message: why kafkajs cannot write it (it is left out of the batch), or the partition it named. */
        const refused = new Map<number, SinkWriteError>();
        const named = new Map<number, { topic: string; partition: number }>();
        const whole = Promise.resolve().then(async () => {
          const serialized = topics.map(([topic, indexes]) => {
            const name = c.normalizePattern!(topic);
            return { topic: name, indexes, messages: indexes.map((i): unknown => serializer.serialize(messageOf(i), { pattern: name })) };
          });
          // Nest awaits a serializer (it may be async, e.g. a schema registry's): so does this.
          // every topic's at once, so that no serializer's rejection is left without a handler
          if (serialized.some((t) => t.messages.some(isThenable))) {
            await Promise.all(serialized.map(async (t) => void (t.messages = await Promise.all(t.messages))));
          }
          const topicMessages = serialized
            .map(({ topic, indexes, messages: out }) => ({ topic, messages: out.filter((m, j) => sendable(m, indexes[j], topic, refused, named)) }))
            .filter((t) => t.messages.length > 0);
          if (topicMessages.length === 0) return undefined; // every message refused: nothing to send
          const options = sendOptions() as { acks?: unknown };
          const metadata = await producer.sendBatch!({ ...options, topicMessages });
          return options.acks === 0 ? undefined : written(metadata); // with acks = 0 the broker answers nothing
        });
        for (const [topic, indexes] of topics) {
          const sent = whole.then(
            (partitions) => partitions,
            (error: unknown) => {
              const rest = indexes.filter((i) => !refused.has(i));
              if (topics.length <= 1 || rest.length === 0) throw error;
              return perTopic(topic, rest.map(messageOf)).then(() => undefined);
            },
          );
          for (const i of indexes) {
            const one = sent.then((partitions) => {
              const refusal = refused.get(i);
              if (refusal) throw refusal;
              const target = named.get(i);
              if (target && partitions && !partitions.has(`${target.topic}\0${target.partition}`)) throw missingPartition(target.topic, target.partition);
            }, (error: unknown) => {
              throw refused.get(i) ?? error;
            });
            one.catch(() => undefined);
            results[i] = one;
          }
        }
        return results;
      }
      for (const [topic, indexes] of byTopic) {
        const sent = perTopic(topic, indexes.map(messageOf));
        sent.catch(() => undefined);
        for (const i of indexes) results[i] = sent;
      }
      return results;
    },
  };
}

/** Whether kafkajs can write a serialized message; if not, notes why under its index. Notes the partition a message names. */
function sendable(message: unknown, index: number, topic: string, refused: Map<number, SinkWriteError>, named: Map<number, { topic: string; partition: number }>): boolean {
  const problem = kafkaRefusal(message);
  if (problem !== undefined) {
    refused.set(index, refusedMessage(topic, problem));
    return false;
  }
  const partition = (message as { partition?: unknown }).partition;
  if (typeof partition === 'number') named.set(index, { topic, partition });
  return true;
}

/** The topic-partitions a `sendBatch` wrote (its `RecordMetadata[]`: kafkajs leaves out a partition it found no leader for), as `topic\0partition`. */
function written(metadata: unknown): Set<string> | undefined {
  if (!Array.isArray(metadata)) return undefined;
  return new Set(metadata.map((m: { topicName?: unknown; partition?: unknown }) => `${String(m.topicName)}\0${String(m.partition)}`));
}

/** Whether a serializer is Nest's own `KafkaRequestSerializer` (not a subclass): any key and value become a string, a Buffer or null. */
function isNestSerializer(serializer: unknown): boolean {
  return (serializer as { constructor?: { name?: string } } | undefined)?.constructor?.name === 'KafkaRequestSerializer';
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
