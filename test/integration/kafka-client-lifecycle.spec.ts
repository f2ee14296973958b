import { Controller, Get, Logger, Param } from '@nestjs/common';
import { jest } from '@jest/globals';
import { ClientsModule, Transport } from '@nestjs/microservices';
import { logLevel, Partitioners } from 'kafkajs';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, type DeferredWorkModuleOptions, type JobItem } from 'nestjs-deferred-work';
import { ClientProxySink, emitEvent } from 'nestjs-deferred-work/microservices';
import { eventually } from '../support/eventually';
import { KafkaMock } from '../support/kafka-mock';
import { KafkaReader } from '../support/kafka-reader';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp } from '../support/platforms';

/**
 * `ClientKafka` at the ends of the app's life, against librdkafka's mock cluster: a producer-only
 * client (`producerOnlyMode: true`, as docs/sinks/microservices.md recommends for an app that only
 * emits) connects at the first write without a consumer group to join — no failed write at boot — and
 * closes within a second of the drain; and a shutdown whose deadline passes with a write in flight
 * (the cluster paused under it) dead-letters that write's items `shutdown-in-flight` and the rest
 * `shutdown`, splitting the counts in its error line — how many of the in-flight ones the cluster
 * wrote once it answered again is read back and printed.
 */
failOnUnhandledRejection();
const RUN = `dw-kafka-life-${process.pid}-${Date.now().toString(36)}`;
const TOKEN = 'KAFKA_EVENTS';
const topicOf = (platform: string, test: string) => `${RUN}-${test}-${platform}`;
const cluster = new KafkaMock(3);
let reader: KafkaReader | undefined;

@Controller()
class EventsController {
  @Get('events/:topic/:mark/:n')
  @AfterResponse()
  events(@Param('topic') topic: string, @Param('mark') mark: string, @Param('n') n: string, @Deferred() work: DeferredScope) {
    for (let i = 0; i < Number(n); i++) emitEvent(work, TOKEN, topic, { key: `${mark}-${i % 5}`, value: { mark: `${mark}-${i}` } });
    return { mark };
  }
}

/** Starts an app whose registered ClientKafka is producer-only (kafkajs's `requestTimeout` when given), with the module's `options`. */
function startKafkaApp(platform: Platform, options: Omit<DeferredWorkModuleOptions, 'sinks'> = {}, requestTimeout?: number) {
  const sink = new ClientProxySink({ clientToken: TOKEN });
  const app = startApp(platform, {
    imports: [
      ClientsModule.register([
        {
          name: TOKEN,
          transport: Transport.KAFKA,
          options: {
            client: { clientId: `life-${platform.name}`, brokers: cluster.brokers, logLevel: logLevel.NOTHING, ...(requestTimeout ? { requestTimeout } : {}) },
            producer: { createPartitioner: Partitioners.DefaultPartitioner },
            producerOnlyMode: true,
            send: { acks: -1 },
          },
        },
      ]),
      DeferredWorkModule.forRoot({ sinks: [sink], ...options }),
    ],
    controllers: [EventsController],
  });
  return { sink, app };
}

beforeAll(async () => {
  await cluster.start();
  reader = new KafkaReader(cluster.brokers, platforms.flatMap((p) => [topicOf(p.name, 'boot'), topicOf(p.name, 'deadline')]), `${RUN}-group`);
  await reader.start();
}, 60_000);

afterAll(async () => {
  await cluster.resume();
  await reader?.stop();
  await cluster.stop();
});

describe.each(platforms)('ClientKafka at boot and shutdown ($name)', (platform) => {
  it('producer-only: the first requests after boot are written without a failed write, and app.close() ends within a second of the drain', async () => {
    const topic = topicOf(platform.name, 'boot');
    // a 500-ms linger: the events of the requests just before the close are still held when it starts
    const { sink, app } = startKafkaApp(platform, { sinkOptions: { [TOKEN]: { flushIntervalMs: 500, maxBatchSize: 512 } } });
    const started = await app;
    const work = started.app.get(DeferredWork);
    const bootedAt = Date.now();
    expect((await load(started.url, range(0, 20).map((i) => `/events/${topic}/boot${i}/5`), 5)).every((s) => s === 200)).toBe(true);
    await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ delivered: 100, pending: 0 }), 10_000);
    const firstMs = Date.now() - bootedAt;
    expect(work.stats().sinks[sink.name].failedWrites).toBe(0);
    // A backlog at shutdown: 50 requests' events, the close started at once.
    expect((await load(started.url, range(0, 50).map((i) => `/events/${topic}/late${i}/5`), 10)).every((s) => s === 200)).toBe(true);
    const heldAtClose = work.stats().sinks[sink.name].pending;
    expect(heldAtClose).toBeGreaterThan(0);
    let drainedAt = 0;
    const watch = setInterval(() => {
      if (drainedAt === 0 && work.stats().sinks[sink.name].pending === 0) drainedAt = Date.now();
    }, 2);
    const closing = Date.now();
    try {
      await started.close();
    } finally {
      clearInterval(watch);
    }
    const closedAt = Date.now();
    const stats = work.stats().sinks[sink.name];
    expect(stats).toMatchObject({ accepted: 350, delivered: 350, deadLettered: 0, failedWrites: 0 });
    expect(await reader!.caughtUp(topic)).toHaveLength(350);
    console.log(
      `[producer-only ClientKafka, ${platform.name}] first 100 events delivered ${firstMs} ms after boot (a 500-ms linger), failed writes at boot ${stats.failedWrites}; ` +
        `app.close() with ${heldAtClose} events held: ${closedAt - closing} ms, the drain ${(drainedAt || closedAt) - closing} ms, then ${closedAt - (drainedAt || closedAt)} ms more`,
    );
    expect(closedAt - (drainedAt || closedAt)).toBeLessThan(1000);
  }, 60_000);

  it('past the deadline with a write in flight: its items are shutdown-in-flight, the rest shutdown, the error line splits the counts', async () => {
    const topic = topicOf(platform.name, 'deadline');
    const errors = jest.spyOn(Logger.prototype, 'error');
    // ClientKafka.close() waits for the produce requests in flight: with the cluster paused, until they time
    // out — kafkajs's requestTimeout (30 s by default; 3 s here), twice when kafkajs retries one on a broker
    // it has not disconnected yet (it disconnects the seed broker first)
    const requestTimeout = 3000;
    const options = { sinkOptions: { [TOKEN]: { maxBatchSize: 5, flushIntervalMs: 1 } }, shutdownTimeoutMs: 1000, deadLetterCapacity: 100 };
    const { sink, app } = startKafkaApp(platform, options, requestTimeout);
    const started = await app;
    const work = started.app.get(DeferredWork);
    try {
      // Connected, and the topic known, before the pause.
      expect((await load(started.url, [`/events/${topic}/warm/1`], 1))[0]).toBe(200);
      await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ delivered: 1 }), 10_000);
      await cluster.pause();
      expect((await load(started.url, [`/events/${topic}/first/5`], 1))[0]).toBe(200);
      await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ accepted: 6, inFlight: 5 }));
      const sentAt = Date.now();
      expect((await load(started.url, [`/events/${topic}/later/7`], 1))[0]).toBe(200);
      await eventually(() => expect(work.stats().sinks[sink.name]).toMatchObject({ accepted: 13, inFlight: 5, pending: 12 }));
      const began = Date.now();
      await started.close();
      const closedAt = Date.now();
      const marks = (reason: string) =>
        work
          .deadLetters()
          .filter((l) => l.reason === reason)
          .map((l) => ((l.item as JobItem).data as { value: { mark: string } }).value.mark)
          .sort();
      expect(marks('shutdown-in-flight')).toEqual(range(0, 5).map((i) => `first-${i}`));
      expect(marks('shutdown')).toEqual(range(0, 7).map((i) => `later-${i}`));
      const line = errors.mock.calls.map((call) => String(call[0])).find((m) => m.startsWith('Shutdown deadline'));
      expect(line).toMatch(new RegExp(`passed with 12 items undelivered \\(${TOKEN}: 12\\) — 7 never sent, and 5 in a write still in flight \\(${TOKEN}: 5\\), which may have been delivered`));
      // the client's close ended once its requests in flight timed out
      expect(closedAt - sentAt).toBeLessThan(2 * requestTimeout + 1500);
      // The cluster answers again: what did it write of the write in flight?
      await cluster.resume();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const written = (await reader!.caughtUp(topic)).map((m) => (JSON.parse(m.value!) as { mark: string }).mark);
      const inFlight = written.filter((m) => m.startsWith('first-'));
      expect(written.filter((m) => m.startsWith('later-'))).toEqual([]); // never sent
      expect(new Set(inFlight).size).toBeLessThanOrEqual(5);
      console.log(
        `[kafka shutdown past its deadline, ${platform.name}] app.close() took ${closedAt - began} ms against shutdownTimeoutMs 1000 ` +
          `(the cluster paused; ClientKafka's close waited for the produce requests in flight: ${closedAt - sentAt} ms after they were sent, requestTimeout ${requestTimeout}); ` +
          `5 dead-lettered shutdown-in-flight, 7 shutdown; of the 5 in flight, ${new Set(inFlight).size} are in the topic 1 s after the resume ` +
          `(${inFlight.length - new Set(inFlight).size} copies): a redrive would write them again`,
      );
    } finally {
      errors.mockRestore();
      await cluster.resume();
    }
  }, 60_000);
});
