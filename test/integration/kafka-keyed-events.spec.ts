import { Controller, Get, Param } from '@nestjs/common';
import { type ClientKafka, ClientsModule, Transport } from '@nestjs/microservices';
import { logLevel, Partitioners } from 'kafkajs';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, InjectDeferredClient } from 'nestjs-deferred-work';
import { ClientProxySink, emitEvent } from 'nestjs-deferred-work/microservices';
import { lastValueFrom } from 'rxjs';
import { eventually } from '../support/eventually';
import { KafkaMock } from '../support/kafka-mock';
import { KafkaReader, perKey, stepsBack } from '../support/kafka-reader';
import { range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';

/**
 * Keyed events the Nest way, against librdkafka's mock cluster (3 brokers, 4 partitions a topic;
 * test/support/kafka-mock.ts), read back by a kafkajs consumer group. `ClientKafka` is registered as
 * docs/sinks/microservices.md's Kafka row says (producer only, the default partitioner). Each request
 * defers, for the 10 keys of its lane, `{ key, value: { key, seq }, headers }` — Nest's own
 * `ClientKafka.emit` form — through `emitEvent` on even rounds and the `@InjectDeferredClient` handle
 * on odd ones, plus one unkeyed event. Lanes run side by side, each lane's requests one after the
 * other, so each key's events are accepted in `seq` order: 5 lanes × 20 rounds × 10 keys = 1,000 keyed
 * events over 50 keys, and 100 unkeyed, per adapter.
 */
failOnUnhandledRejection();
const RUN = `dw-keyed-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = 'KAFKA_EVENTS';
const LANES = 5;
const KEYS_PER_LANE = 10;
const ROUNDS = 20;
const topicOf = (platform: string) => `${RUN}-${platform}`;
const cluster = new KafkaMock(3);
let reader: KafkaReader | undefined;

/** The handle's `emit`, as the test uses it. */
interface EventsHandle {
  emit(pattern: string, data: unknown): unknown;
}

@Controller()
class EventsController {
  constructor(@InjectDeferredClient(TOKEN) private readonly events: EventsHandle) {}

  @Get('keyed/:topic/:lane/:round')
  @AfterResponse()
  keyed(@Param('topic') topic: string, @Param('lane') lane: string, @Param('round') round: string, @Deferred() work: DeferredScope) {
    const seq = Number(round);
    for (let k = 0; k < KEYS_PER_LANE; k++) {
      const key = `key-${lane}-${k}`;
      const event = { key, value: { key, seq }, headers: { lane } };
      if (seq % 2 === 0) emitEvent(work, TOKEN, topic, event);
      else this.events.emit(topic, event);
    }
    emitEvent(work, TOKEN, topic, { plain: `${lane}-${round}` });
    return { lane, round };
  }
}

beforeAll(async () => {
  await cluster.start();
  reader = new KafkaReader(cluster.brokers, platforms.map((p) => topicOf(p.name)), `${RUN}-group`);
  await reader.start();
}, 60_000);

afterAll(async () => {
  await reader?.stop();
  await cluster.stop();
});

describe.each(platforms)('keyed Kafka events, read back by a kafkajs consumer ($name)', (platform) => {
  it("1,000 keyed events over 50 keys: each key's on one partition in send order, written as ClientKafka.emit writes them; unkeyed ones unchanged", async () => {
    const topic = topicOf(platform.name);
    const sink = new ClientProxySink({ clientToken: TOKEN });
    const started = await startApp(platform, {
      imports: [
        ClientsModule.register([
          {
            name: TOKEN,
            transport: Transport.KAFKA,
            options: {
              client: { clientId: `keyed-${platform.name}`, brokers: cluster.brokers, logLevel: logLevel.NOTHING },
              producer: { createPartitioner: Partitioners.DefaultPartitioner },
              producerOnlyMode: true,
              send: { acks: -1 },
            },
          },
        ]),
        DeferredWorkModule.forRoot({ sinks: [sink], sinkOptions: { [sink.name]: { flushIntervalMs: 5 } } }),
      ],
      controllers: [EventsController],
    });
    const work = started.app.get(DeferredWork);
    try {
      const began = Date.now();
      const statuses: number[] = [];
      await Promise.all(
        range(0, LANES).map(async (lane) => {
          for (let round = 0; round < ROUNDS; round++) {
            const res = await fetch(`${started.url}/keyed/${topic}/${lane}/${round}`);
            await res.arrayBuffer();
            statuses.push(res.status);
          }
        }),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(LANES * ROUNDS);
      const total = LANES * ROUNDS * (KEYS_PER_LANE + 1);
      await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ accepted: total, delivered: total, pending: 0, deadLettered: 0 }), 20_000);
      const deliveredMs = Date.now() - began;
      // The same keyed and unkeyed events through ClientKafka.emit itself, for comparison.
      const client = started.app.get<ClientKafka>(TOKEN);
      await lastValueFrom(client.emit(topic, { key: 'key-0-0', value: { key: 'key-0-0', seq: 'direct' }, headers: { lane: '0' } }), { defaultValue: undefined });
      await lastValueFrom(client.emit(topic, { plain: 'direct' }), { defaultValue: undefined });

      const all = await reader!.caughtUp(topic);
      expect(all).toHaveLength(total + 2);
      const direct = all.filter((m) => m.value?.includes('"direct"'));
      const mine = all.filter((m) => !m.value?.includes('"direct"'));
      const keys = perKey(mine);
      expect(keys.size).toBe(LANES * KEYS_PER_LANE);
      const wrong: string[] = [];
      for (const [key, { partitions, seqs, copies }] of keys) {
        if (partitions.size !== 1) wrong.push(`${key} on partitions ${[...partitions].join(',')}`);
        if (stepsBack(seqs) > 0 || seqs.length !== ROUNDS || copies > 0) wrong.push(`${key}: ${seqs.join(',')} (+${copies} copies)`);
      }
      expect(wrong).toEqual([]);
      const used = new Map<number, number>();
      for (const { partitions } of keys.values()) for (const p of partitions) used.set(p, (used.get(p) ?? 0) + 1);
      expect(used.size).toBeGreaterThan(1); // the keys spread over the partitions

      // As ClientKafka.emit writes them: the same key, partition, value encoding and headers — plus dw-message-id.
      const directKeyed = direct.find((m) => m.key !== null)!;
      const first = mine.find((m) => m.key === 'key-0-0' && JSON.parse(m.value!).seq === 0)!;
      expect({ key: first.key, partition: first.partition }).toEqual({ key: directKeyed.key, partition: directKeyed.partition });
      expect(first.value).toBe(JSON.stringify({ key: 'key-0-0', seq: 0 }));
      expect(directKeyed.value).toBe(JSON.stringify({ key: 'key-0-0', seq: 'direct' }));
      expect(directKeyed.headers).toEqual({ lane: '0' });
      expect(first.headers).toEqual({ lane: '0', 'dw-message-id': expect.stringMatching(/^dw-/) });
      // Unkeyed: the data as the value, no key, the id as the only header — as before.
      const plain = mine.filter((m) => m.key === null);
      expect(plain).toHaveLength(LANES * ROUNDS);
      expect(plain.every((m) => /^\{"plain":"\d-\d+"\}$/.test(m.value!) && Object.keys(m.headers).join() === 'dw-message-id')).toBe(true);
      const directPlain = direct.find((m) => m.key === null)!;
      expect([directPlain.value, directPlain.headers]).toEqual(['{"plain":"direct"}', {}]);
      expect(new Set(mine.map((m) => m.headers['dw-message-id'])).size).toBe(total);
      console.log(
        `[keyed events, ${platform.name}] ${total - LANES * ROUNDS} keyed events over ${keys.size} keys and ${LANES * ROUNDS} unkeyed, delivered in ${deliveredMs} ms; ` +
          `keys per partition ${JSON.stringify(Object.fromEntries([...used].sort()))}; every key on one partition, in send order, no copies`,
      );
    } finally {
      await started.close();
    }
  }, 60_000);
});
