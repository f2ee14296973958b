import { Controller, Get, Param } from '@nestjs/common';
import { ClientsModule, Transport } from '@nestjs/microservices';
import { logLevel, Partitioners } from 'kafkajs';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { ClientProxySink, emitEvent } from 'nestjs-deferred-work/microservices';
import { eventually } from '../support/eventually';
import { KafkaMock } from '../support/kafka-mock';
import { KafkaReader, perKey, stepsBack } from '../support/kafka-reader';
import { range, watchIdentity } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';

/**
 * Keyed events through a 7-s pause of the whole mock cluster (SIGSTOP: connections open, nothing
 * answers; test/support/kafka-mock.ts), the sink on its default options (retries for 5 minutes, one
 * probe at a time while the broker is down, writeTimeoutMs 5 s). 5 lanes of requests side by side,
 * one request every 100 ms in each lane, each deferring one event for each of its lane's 10 keys with
 * the lane's round as `seq` — each key's events are accepted in `seq` order — for 10 s; the pause
 * starts 1.5 s in. Read back by a kafkajs consumer group: every event there, each key on one
 * partition in `seq` order (copies, the same dw-message-id again, counted and printed).
 */
failOnUnhandledRejection();
const RUN = `dw-outage-order-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = 'KAFKA_EVENTS';
const LANES = 5;
const KEYS_PER_LANE = 10;
const EVERY_MS = 100;
const LOAD_MS = 10_000;
const PAUSE_AT_MS = 1_500;
const PAUSE_MS = 7_000;
const topicOf = (platform: string) => `${RUN}-${platform}`;
const cluster = new KafkaMock(3);
let reader: KafkaReader | undefined;

@Controller()
class EventsController {
  @Get('keyed/:topic/:lane/:round')
  @AfterResponse()
  keyed(@Param('topic') topic: string, @Param('lane') lane: string, @Param('round') round: string, @Deferred() work: DeferredScope) {
    for (let k = 0; k < KEYS_PER_LANE; k++) {
      const key = `key-${lane}-${k}`;
      emitEvent(work, TOKEN, topic, { key, value: { key, seq: Number(round) } });
    }
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

describe.each(platforms)('keyed Kafka events through a paused cluster ($name)', (platform) => {
  it('a 7-s pause under load, the default retry options: nothing lost, each key on one partition in send order', async () => {
    const topic = topicOf(platform.name);
    const sink = new ClientProxySink({ clientToken: TOKEN });
    const started = await startApp(platform, {
      imports: [
        ClientsModule.register([
          {
            name: TOKEN,
            transport: Transport.KAFKA,
            options: {
              client: { clientId: `outage-${platform.name}`, brokers: cluster.brokers, logLevel: logLevel.NOTHING },
              producer: { createPartitioner: Partitioners.DefaultPartitioner },
              producerOnlyMode: true,
              send: { acks: -1 },
            },
          },
        ]),
        DeferredWorkModule.forRoot({ sinks: [sink] }), // the sink's and the module's defaults, retries included
      ],
      controllers: [EventsController],
    });
    const work = started.app.get(DeferredWork);
    try {
      const began = Date.now();
      let pausedAt = 0;
      let resumedAt = 0;
      let mostPending = 0;
      const outage = (async () => {
        await new Promise((resolve) => setTimeout(resolve, PAUSE_AT_MS));
        await cluster.pause();
        pausedAt = Date.now();
        while (Date.now() - pausedAt < PAUSE_MS) {
          mostPending = Math.max(mostPending, work.stats().sinks[sink.name].pending);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await cluster.resume();
        resumedAt = Date.now();
      })();
      const statuses: number[] = [];
      const lanes = Promise.all(
        range(0, LANES).map(async (lane) => {
          for (let round = 0; Date.now() - began < LOAD_MS; round++) {
            const res = await fetch(`${started.url}/keyed/${topic}/${lane}/${round}`);
            await res.arrayBuffer();
            statuses.push(res.status);
            const due = began + (round + 1) * EVERY_MS - Date.now();
            if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
          }
        }),
      );
      const watched = await watchIdentity(work, Promise.all([lanes, outage]), sink.name);
      expect(watched.broken).toEqual([]);
      expect(statuses.every((s) => s === 200)).toBe(true);
      const total = statuses.length * KEYS_PER_LANE;
      await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ accepted: total, delivered: total, pending: 0, deadLettered: 0, dropped: 0 }), 60_000, 20);
      const drainedMs = Date.now() - resumedAt;
      const stats = work.stats().sinks[sink.name];
      expect(stats.failedWrites).toBeGreaterThan(0); // the pause was felt: a write timed out

      const keys = perKey(await reader!.caughtUp(topic));
      const problems: string[] = [];
      let copies = 0;
      let back = 0;
      for (const [key, entry] of keys) {
        copies += entry.copies;
        back += stepsBack(entry.seqs);
        if (entry.partitions.size !== 1) problems.push(`${key} on partitions ${[...entry.partitions].join(',')}`);
        if (new Set(entry.seqs).size !== entry.seqs.length) problems.push(`${key}: a seq twice under two ids`);
      }
      const found = [...keys.values()].reduce((n, entry) => n + entry.seqs.length, 0);
      console.log(
        `[kafka pause, ${platform.name}] ${total} keyed events over ${keys.size} keys from ${statuses.length} requests; cluster paused ${resumedAt - pausedAt} ms ` +
          `(from ${pausedAt - began} ms in), at most ${mostPending} pending; failed writes ${stats.failedWrites} (last ${stats.lastErrorCode ?? 'no code'}); ` +
          `all delivered ${drainedMs} ms after the resume; read back ${found} distinct, ${copies} copies, ${back} steps back in a key's order`,
      );
      expect(found).toBe(total); // nothing lost
      expect(keys.size).toBe(LANES * KEYS_PER_LANE);
      expect(problems).toEqual([]);
      expect(back).toBe(0); // each key in send order
    } finally {
      await started.close();
    }
  }, 90_000);
});
