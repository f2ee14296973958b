import { SinkWriteError } from '../../core/errors/sink-write.error';
import { MESSAGE_ID_HEADER } from './client-proxy-sink.options';
import { withPayloadId } from './transport-send';

/**
 * An event's data in the shape Nest's `ClientKafka.emit` takes as a Kafka message: an object with
 * `key` or `value` in it (`KafkaRequestSerializer`'s own test), e.g. `{ key: orderId, value: order }`.
 */
export interface NestKafkaMessage {
  key?: unknown;
  value?: unknown;
  headers?: unknown;
  partition?: unknown;
  timestamp?: unknown;
}

/** Whether `data` is a Kafka message the way Nest's `KafkaRequestSerializer` tells one (any other data is the value). */
export function isKafkaMessage(data: unknown): data is NestKafkaMessage {
  return data !== null && typeof data === 'object' && ('key' in data || 'value' in data);
}

/**
 * The message handed to the client's serializer for one event, built afresh on each send (Nest's
 * serializer encodes it in place). Data in Nest's Kafka message shape keeps its key, partition,
 * timestamp and headers, the stable id added to its headers and, with `payloadIdKey`, to an object
 * value; any other data is the value, with the id as its only header.
 */
export function kafkaMessageOf(data: unknown, payloadIdKey: string | false | undefined, id: string): Record<string, unknown> {
  if (!isKafkaMessage(data)) return { value: withPayloadId(data, payloadIdKey, id), headers: { [MESSAGE_ID_HEADER]: id } };
  const message: Record<string, unknown> = { ...data };
  // read through `in`, as Nest does: a getter on a class's prototype counts too
  for (const field of ['key', 'partition', 'timestamp'] as const) if (field in data) message[field] = data[field];
  message.value = withPayloadId(data.value, payloadIdKey, id);
  message.headers = { ...(data.headers as object | null | undefined), [MESSAGE_ID_HEADER]: id };
  return message;
}

/** The largest partition number Kafka has (an int32). */
const MAX_PARTITION = 2 ** 31 - 1;

/** A timestamp kafkajs writes: milliseconds since the epoch, as a string of digits or a whole number. */
const isTimestamp = (t: unknown) => (typeof t === 'string' && /^\d{1,16}$/.test(t)) || (typeof t === 'number' && Number.isSafeInteger(t) && t >= 0);

/** Bytes kafkajs writes as they are: a string or a Buffer. */
const isBytes = (v: unknown) => typeof v === 'string' || Buffer.isBuffer(v);

/** How a value reads in a message: `42 (a number)`, `an object`. */
function shown(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return `a ${value.constructor.name} that is not a Buffer`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'no prototype'})`;
  const text = typeof value === 'string' ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : String(value);
  return `${text} (a ${typeof value})`;
}

/** What is wrong with a message's headers, partition or timestamp — what kafkajs takes of it as given — or `undefined`. */
function fieldProblem(m: NestKafkaMessage): string | undefined {
  const { headers, partition, timestamp } = m;
  if (headers !== undefined && headers !== null) {
    if (typeof headers !== 'object' || Array.isArray(headers) || Buffer.isBuffer(headers)) {
      return `its headers are ${shown(headers)}; give an object of header names to strings (or Buffers, or arrays of them)`;
    }
    for (const [name, value] of Object.entries(headers)) {
      const ok = isBytes(value) || (Array.isArray(value) && value.every(isBytes));
      if (!ok) return `header "${name}" is ${shown(value)}; kafkajs writes a header value only as a string, a Buffer or an array of them (String(value), or leave the header out)`;
    }
  }
  if (partition !== undefined && partition !== null && !(typeof partition === 'number' && Number.isInteger(partition) && partition >= 0 && partition <= MAX_PARTITION)) {
    return `its partition is ${shown(partition)}; give a whole number from 0 to the topic's partition count - 1, or leave it out to let the partitioner choose by key`;
  }
  if (timestamp !== undefined && timestamp !== null && !isTimestamp(timestamp)) {
    return `its timestamp is ${shown(timestamp)}; give milliseconds since the epoch as a string of digits (String(Date.now())), or leave it out for the time of sending`;
  }
  return undefined;
}

/**
 * Checks an event's data when it is deferred: a `dw-message-id` header of its own; and for a client
 * with Nest's own serializer (`nestSerializer`), what reaches kafkajs as given (headers, partition,
 * timestamp) and that kafkajs would refuse — Nest's serializer turns any key and value into a string,
 * a Buffer or null. Throws an `Error` saying what is wrong and how to fix it.
 */
export function checkKafkaEvent(data: unknown, nestSerializer: boolean): void {
  if (!isKafkaMessage(data)) return;
  const headers = data.headers;
  if (headers !== null && typeof headers === 'object' && Object.prototype.hasOwnProperty.call(headers, MESSAGE_ID_HEADER)) {
    throw new Error(
      `its headers set "${MESSAGE_ID_HEADER}", the header the sink sets to the message's stable id. ` +
        `Give your id as the event's jobId instead (emitEvent(work, sink, topic, data, { jobId }), or emit(topic, data, { jobId }) on the handle)`,
    );
  }
  const problem = nestSerializer ? fieldProblem(data) : undefined;
  if (problem !== undefined) throw new Error(`a Kafka message ({ key, value, headers, partition, timestamp }): ${problem}`);
}

/**
 * What kafkajs cannot write in a message as the client's serializer returned it, or `undefined`:
 * kafkajs throws for the whole batch on a key or value that is not a string, a Buffer or null, a
 * missing value, a header value of another type, a partition or timestamp that is not a whole number
 * (a negative or missing partition it drops without a word).
 */
export function kafkaRefusal(message: unknown): string | undefined {
  if (message === null || typeof message !== 'object') return `the serializer returned ${shown(message)}, not a message object`;
  const m = message as NestKafkaMessage;
  if (m.value === undefined) return 'it has no value after the serializer (kafkajs refuses a message without one; null is a tombstone)';
  if (m.value !== null && !isBytes(m.value)) return `its value is ${shown(m.value)} after the serializer; kafkajs writes a string, a Buffer or null`;
  if (m.key !== undefined && m.key !== null && !isBytes(m.key)) return `its key is ${shown(m.key)} after the serializer; kafkajs writes a string, a Buffer or null`;
  return fieldProblem(m);
}

/** The failure of a message kafkajs cannot write (for good: sending it again would not change it). */
export function refusedMessage(topic: string, problem: string): SinkWriteError {
  return new SinkWriteError(`Kafka: a message for topic "${topic}" cannot be written: ${problem}.`, { retryable: false, code: 'INVALID_RECORD' });
}

/** The failure of a message for a partition the topic does not have (kafkajs sends nothing for it, and says nothing). */
export function missingPartition(topic: string, partition: number): SinkWriteError {
  return new SinkWriteError(
    `Kafka: topic "${topic}" has no partition ${partition} (kafkajs sent nothing for it). Give a partition below the topic's partition count, or leave it out.`,
    { retryable: false, code: 'UNKNOWN_TOPIC_OR_PARTITION' },
  );
}
