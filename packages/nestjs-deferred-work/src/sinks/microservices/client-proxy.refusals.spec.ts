import { ClientMqtt, ClientNats, ClientRedis } from '@nestjs/microservices';
import { InvalidArgumentError } from '@nats-io/transport-node';
import { ReplyError } from 'ioredis';
import { ErrorWithReasonCode } from 'mqtt';
import type { JobItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkItemFailure, SinkWriteResult } from '../../core/sink.interface';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import { sinkAttachContext } from '../../testing/sink-attach-context';
import { ClientProxySink } from './client-proxy.sink';
import type { ClientProxySinkOptions } from './client-proxy-sink.options';

/**
 * A message the broker refuses for good — alone, the connection and the other messages going on — is
 * failed as not retryable, with the broker's code, so the dispatcher dead-letters it at once instead of
 * retrying it to exhaustion; what may pass later stays retryable. Real Nest clients, each with a fake
 * connection answering what the real broker answers (seen in test/conformance/microservices-*.spec.ts).
 */
const job = (name: string, data: unknown): JobItem => ({ kind: 'job', queue: 'events', name, data, when: 'success', createdAt: Date.now() });

async function writeThrough(client: object, batch: SinkItem[], options: Partial<ClientProxySinkOptions> = {}): Promise<SinkItemFailure[]> {
  const sink = new ClientProxySink({ client: client as never, name: 'events', ...options });
  await sink.attach(sinkAttachContext());
  const result = (await sink.write(batch, { signal: new AbortController().signal, attempt: 1 })) as SinkWriteResult | undefined;
  return result?.failed ?? [];
}

/** The failures as `[index, retryable, code]`. */
const summary = (failed: SinkItemFailure[]) => failed.map((f) => [f.index, f.retryable, (f.error as SinkWriteError).code]);

describe('ClientProxySink: a message the broker refuses for good is not retried', () => {
  it('core NATS: a message over the server’s max_payload (nats.js refuses to publish it) fails alone, not retryable', async () => {
    const published: string[] = [];
    const nc = {
      info: { max_payload: 1024 },
      isClosed: () => false,
      flush: async () => undefined,
      publish(subject: string, data: Uint8Array | string) {
        // what nats-core's publish() does with a payload over the INFO's max_payload
        if (data.length > 1024) throw InvalidArgumentError.format('payload', 'max_payload size exceeded');
        published.push(subject);
      },
    };
    const client = Object.assign(new ClientNats({}), { natsClient: nc, connect: async () => nc });
    const failed = await writeThrough(client, [job('a', { n: 1 }), job('big', { pad: 'x'.repeat(2000) }), job('c', { n: 3 })]);
    expect(summary(failed)).toEqual([[1, false, 'MAX_PAYLOAD_EXCEEDED']]);
    expect(String((failed[0].error as Error).message)).toMatch(/over the server's max_payload .*Make the payload smaller/);
    expect(published).toEqual(['a', 'c']);
  });

  it('NATS JetStream: an ack refusing the message (400, e.g. over the stream’s max_msg_size) is not retryable; a 503 (stream full) is', async () => {
    const encode = (reply: unknown) => ({ data: new TextEncoder().encode(JSON.stringify(reply)) });
    const nc = {
      info: { max_payload: 1_048_576 },
      isClosed: () => false,
      flush: async () => undefined,
      async request(subject: string) {
        if (subject === 'big') return encode({ error: { code: 400, err_code: 10054, description: 'message size exceeds maximum allowed' }, stream: 'S', seq: 0 });
        if (subject === 'full') return encode({ error: { code: 503, err_code: 10077, description: 'maximum messages exceeded' }, stream: 'S', seq: 0 });
        if (subject === 'huge') throw InvalidArgumentError.format('payload', 'max_payload size exceeded');
        return encode({ stream: 'S', seq: 1 });
      },
    };
    const client = Object.assign(new ClientNats({}), { natsClient: nc, connect: async () => nc });
    const failed = await writeThrough(client, [job('ok', {}), job('big', {}), job('full', {}), job('huge', {})], { nats: { jetStream: true } });
    expect(summary(failed)).toEqual([
      [1, false, '10054'],
      [2, true, '10077'],
      [3, false, 'MAX_PAYLOAD_EXCEEDED'],
    ]);
    expect(String((failed[0].error as Error).message)).toMatch(/refused the message for "big": message size exceeds maximum allowed \(400, err_code 10054\)/);
  });

  it('Redis: an error reply about the PUBLISH itself (NOPERM) fails that message alone, not retryable; a transient one (LOADING) is retried', async () => {
    const published: string[] = [];
    const replies: Record<string, [Error | null, unknown]> = {
      forbidden: [new ReplyError('NOPERM this user has no permissions to access one of the channels used as arguments'), null],
      loading: [new ReplyError('LOADING Redis is loading the dataset in memory'), null],
    };
    const pubClient = {
      status: 'ready',
      pipeline() {
        const channels: string[] = [];
        return {
          publish: (channel: string) => void channels.push(channel),
          exec: async () => channels.map((channel) => replies[channel] ?? (published.push(channel), [null, 1])),
        };
      },
    };
    const client = Object.assign(new ClientRedis({}), { pubClient, connect: async () => undefined });
    const failed = await writeThrough(client, [job('a', {}), job('forbidden', {}), job('loading', {}), job('d', {})]);
    expect(summary(failed)).toEqual([
      [1, false, 'NOPERM'],
      [2, true, 'LOADING'],
    ]);
    expect(published).toEqual(['a', 'd']);
  });

  it('MQTT 5: a PUBACK refusing the message (0x87 not authorized) fails it alone, not retryable; 0x97 quota exceeded is retried', async () => {
    const acked: string[] = [];
    const mqttClient = {
      connected: true,
      options: { protocolVersion: 5 },
      publish(topic: string, _payload: unknown, _options: unknown, callback: (error?: Error) => void) {
        // what mqtt.js hands the publish callback for a PUBACK with a failure reason code
        if (topic.startsWith('$SYS/')) return callback(new ErrorWithReasonCode('Publish error: Not authorized', 0x87));
        if (topic === 'busy') return callback(new ErrorWithReasonCode('Publish error: Quota exceeded', 0x97));
        acked.push(topic);
        callback();
      },
    };
    const client = Object.assign(new ClientMqtt({}), { mqttClient, connect: async () => mqttClient });
    const failed = await writeThrough(client, [job('a', {}), job('$SYS/x', {}), job('busy', {}), job('d', {})]);
    expect(summary(failed)).toEqual([
      [1, false, '0x87'],
      [2, true, '0x97'],
    ]);
    expect(String((failed[0].error as Error).message)).toMatch(/refused the message \(reason code 0x87: not authorized to publish to this topic\)/);
    expect(acked).toEqual(['a', 'd']);
  });
});
