import { ClientKafka } from '@nestjs/microservices';
import type { Message, ProducerBatch, ProducerRecord, RecordMetadata } from 'kafkajs';
import { lastValueFrom } from 'rxjs';
import type { JobItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkWriteResult } from '../../core/sink.interface';
import { sinkAttachContext } from '../../testing/sink-attach-context';
import { ClientProxySink } from './client-proxy.sink';
import { checkKafkaEvent, kafkaMessageOf, kafkaRefusal } from './kafka-messages';

/**
 * Kafka messages the Nest way, up to the producer (a real `ClientKafka` and its serializer; a producer
 * that records what it is given). Against librdkafka's mock cluster, read back by a kafkajs consumer:
 * test/integration/kafka-keyed-events.spec.ts.
 */
const job = (name: string, data: unknown, opts?: JobItem['opts']): JobItem => ({ kind: 'job', queue: 'events', name, data, opts, when: 'success', createdAt: Date.now() });

/** A ClientKafka whose producer records each `send` (Nest's own `emit`) and `sendBatch` (the sink's), answering per partition written. */
function recordingKafka(options: { send?: object; serializer?: unknown } = {}) {
  const batches: ProducerBatch[] = [];
  const records: ProducerRecord[] = [];
  const answer = (topic: string, messages: Message[]): RecordMetadata[] =>
    [...new Set(messages.map((m) => m.partition ?? 0))].filter((p) => p < 4).map((partition) => ({ topicName: topic, partition, errorCode: 0 }));
  const producer = {
    send: async (record: ProducerRecord) => (records.push(record), answer(record.topic, record.messages)),
    sendBatch: async (batch: ProducerBatch) => (batches.push(batch), batch.topicMessages!.flatMap((t) => answer(t.topic, t.messages))),
  };
  const client = new ClientKafka({ client: { brokers: ['127.0.0.1:1'] }, send: options.send ?? { acks: -1 }, ...(options.serializer ? { serializer: options.serializer as never } : {}) });
  Object.assign(client, { _producer: producer, connect: async () => producer });
  return { client, batches, records };
}

async function kafkaSink(options: Parameters<typeof recordingKafka>[0] = {}, payloadIdKey?: string) {
  const kafka = recordingKafka(options);
  const sink = new ClientProxySink({ client: kafka.client, name: 'events', ...(payloadIdKey ? { payloadIdKey } : {}) });
  await sink.attach(sinkAttachContext({}));
  const write = (batch: SinkItem[]) => sink.write(batch, { signal: new AbortController().signal, attempt: 1 }) as Promise<SinkWriteResult | undefined>;
  return { ...kafka, sink, write };
}

describe('Kafka events in Nest’s message shape', () => {
  it('is sent with its key, value, partition, timestamp and headers exactly as ClientKafka.emit writes it, plus the dw-message-id header', async () => {
    const { client, batches, records, write } = await kafkaSink();
    const data = () => ({ key: 'k-1', value: { orderId: '1' }, partition: 2, timestamp: '1700000000000', headers: { tenant: 'acme' } });
    await expect(write([job('orders', data(), { jobId: 'order-1' })])).resolves.toBeUndefined();
    await lastValueFrom(client.emit('orders', data()), { defaultValue: undefined });
    const sent = batches[0].topicMessages![0];
    expect(sent.topic).toBe('orders');
    expect(sent.messages[0]).toEqual({ ...records[0].messages[0], headers: { tenant: 'acme', 'dw-message-id': 'order-1' } });
    expect(records[0].messages[0]).toEqual({ key: 'k-1', value: '{"orderId":"1"}', partition: 2, timestamp: '1700000000000', headers: { tenant: 'acme' } });
  });

  it("plain data stays the value, as before; an object key is encoded as Nest encodes it; the item's data is left as it was", async () => {
    const { batches, write } = await kafkaSink();
    const keyed = { key: { region: 'eu', id: 7 }, value: 'text' };
    await write([job('t', { orderId: '2' }, { jobId: 'a' }), job('t', keyed, { jobId: 'b' }), job('t', 42, { jobId: 'c' })]);
    expect(batches[0].topicMessages![0].messages).toEqual([
      { value: '{"orderId":"2"}', headers: { 'dw-message-id': 'a' } },
      { key: '{"region":"eu","id":7}', value: 'text', headers: { 'dw-message-id': 'b' } },
      { value: '42', headers: { 'dw-message-id': 'c' } },
    ]);
    expect(keyed).toEqual({ key: { region: 'eu', id: 7 }, value: 'text' }); // Nest's serializer encodes in place: not the item's data
  });

  it('puts the id into an object value under payloadIdKey, and leaves any other value alone', () => {
    expect(kafkaMessageOf({ key: 'k', value: { a: 1 } }, 'dwMessageId', 'id-1')).toEqual({ key: 'k', value: { a: 1, dwMessageId: 'id-1' }, headers: { 'dw-message-id': 'id-1' } });
    expect(kafkaMessageOf({ key: 'k', value: 'text' }, 'dwMessageId', 'id-1')).toEqual({ key: 'k', value: 'text', headers: { 'dw-message-id': 'id-1' } });
    expect(kafkaMessageOf({ a: 1 }, 'dwMessageId', 'id-1')).toEqual({ value: { a: 1, dwMessageId: 'id-1' }, headers: { 'dw-message-id': 'id-1' } });
  });

  it('refuses when deferred what kafkajs would refuse or drop (Nest passes headers, partition and timestamp through), and a dw-message-id header of its own', async () => {
    const { sink } = await kafkaSink();
    const refusal = (data: unknown) => {
      try {
        sink.validate(job('orders', data));
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(refusal({ key: 'k', value: 1, partition: 1.5 })).toMatch(/its partition is 1\.5 \(a number\); give a whole number from 0/);
    expect(refusal({ key: 'k', value: 1, partition: '1' })).toMatch(/its partition is "1" \(a string\)/);
    expect(refusal({ key: 'k', value: 1, partition: -1 })).toMatch(/its partition is -1/);
    expect(refusal({ key: 'k', value: 1, timestamp: 'yesterday' })).toMatch(/its timestamp is "yesterday" \(a string\); give milliseconds since the epoch/);
    expect(refusal({ key: 'k', value: 1, headers: { attempt: 3 } })).toMatch(/header "attempt" is 3 \(a number\); kafkajs writes a header value only as a string/);
    expect(refusal({ key: 'k', value: 1, headers: { gone: null } })).toMatch(/header "gone" is null/);
    expect(refusal({ key: 'k', value: 1, headers: 'x' })).toMatch(/its headers are "x" \(a string\)/);
    expect(refusal({ key: 'k', value: 1, headers: { 'dw-message-id': 'mine' } })).toMatch(/its headers set "dw-message-id".*Give your id as the event's jobId/);
    for (const fine of [{ key: 'k', value: 1, partition: 0, timestamp: Date.now(), headers: { a: 'x', b: ['y', 'z'] } }, { key: 7, value: null }, 42, 'text', { no: 'kafka shape' }]) {
      expect(refusal(fine)).toBeUndefined();
    }
  });

  it("with a custom serializer: nothing but the id header is checked when deferred; a serialized message kafkajs cannot write fails alone, for good, and the rest is sent", async () => {
    // a serializer that passes the key through (kafkajs throws for a number key: for the whole batch)
    const serializer = { serialize: (m: { key?: unknown; value: unknown; headers: unknown }) => ({ key: m.key ?? null, value: JSON.stringify(m.value), headers: m.headers }) };
    const { batches, sink, write } = await kafkaSink({ serializer });
    expect(() => sink.validate(job('orders', { key: 5, value: 1, partition: 1.5 }))).not.toThrow();
    const result = await write([job('orders', { key: 'a', value: 1 }), job('orders', { key: 5, value: 2 }), job('orders', { key: 'c', value: 3 })]);
    expect(result?.failed?.map((f) => [f.index, f.retryable, (f.error as { code?: string }).code])).toEqual([[1, false, 'INVALID_RECORD']]);
    expect(String((result!.failed![0].error as Error).message)).toMatch(/a message for topic "orders" cannot be written: its key is 5 \(a number\) after the serializer; kafkajs writes a string, a Buffer or null/);
    expect(batches[0].topicMessages![0].messages.map((m) => m.key)).toEqual(['a', 'c']);
    // a batch of refused messages only: nothing sent
    const alone = await write([job('orders', { key: 6, value: 1 })]);
    expect(alone?.failed?.map((f) => [f.index, f.retryable])).toEqual([[0, false]]);
    expect(batches).toHaveLength(1);
  });

  it('a partition the topic does not have (kafkajs drops it and resolves) fails for good; with acks = 0 nothing comes back to check', async () => {
    const { write } = await kafkaSink();
    const result = await write([job('orders', { key: 'a', value: 1, partition: 3 }), job('orders', { key: 'b', value: 2, partition: 9 })]);
    expect(result?.failed?.map((f) => [f.index, f.retryable, (f.error as { code?: string }).code])).toEqual([[1, false, 'UNKNOWN_TOPIC_OR_PARTITION']]);
    expect(String((result!.failed![0].error as Error).message)).toMatch(/topic "orders" has no partition 9/);
    const unacked = await kafkaSink({ send: { acks: 0 } });
    await expect(unacked.write([job('orders', { key: 'b', value: 2, partition: 9 })])).resolves.toBeUndefined();
  });

  it('kafkaRefusal: what kafkajs cannot write after the serializer', () => {
    expect(kafkaRefusal({ value: 'x', headers: {} })).toBeUndefined();
    expect(kafkaRefusal({ key: Buffer.from('k'), value: null })).toBeUndefined();
    expect(kafkaRefusal({ headers: {} })).toMatch(/no value/);
    expect(kafkaRefusal({ value: 5 })).toMatch(/its value is 5 \(a number\)/);
    expect(kafkaRefusal({ value: 'x', key: new Uint8Array([1]) })).toMatch(/a Uint8Array that is not a Buffer/);
    expect(kafkaRefusal('x')).toMatch(/not a message object/);
    expect(() => checkKafkaEvent({ value: 'x', timestamp: 1.5 }, false)).not.toThrow();
    expect(() => checkKafkaEvent({ value: 'x', timestamp: 1.5 }, true)).toThrow(/timestamp is 1\.5/);
  });
});
