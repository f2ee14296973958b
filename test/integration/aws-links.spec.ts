import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { Controller, Get, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, type SinkItem } from 'nestjs-deferred-work';
import { SnsSink } from 'nestjs-deferred-work/sns';
import { SqsSink } from 'nestjs-deferred-work/sqs';
import type { AwsBatchEndpoint, AwsRecord } from '../support/aws-batch-rules';
import { eventually } from '../support/eventually';
import { load, range, watchIdentity } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { SnsEndpoint } from '../support/sns-endpoint';
import { SqsEndpoint } from '../support/sqs-endpoint';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * SqsSink and SnsSink through a bad link (test/support/tcp-proxy.ts in front of the local protocol
 * endpoints), on Express and Fastify, with a short `writeTimeoutMs` (300 ms):
 * - a slow link: answers late, after the write timeout, while the service did take the call — the
 *   entries are sent again with the same entry id; on a FIFO destination the service drops the replay
 *   by its dedup id (the item id): each message once; on a standard one the copies are counted and
 *   carry the same entry id and item id;
 * - a dead link: cut (connections reset, new ones refused), then black-holed (no answer at all), then
 *   restored: everything delivered after;
 * - a cold start: the app starts while nothing listens on the endpoint's port, takes requests, and
 *   delivers everything once the endpoint comes up.
 * Every response 2xx, the accounting identity exact at every sample, no unhandled rejection.
 */
failOnUnhandledRejection();
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const WRITE_TIMEOUT_MS = 300;
let n = 0;
const nextName = () => `dw-link-${process.pid}-${++n}`;

@Controller()
class MarkController {
  @Get('entries/:mark')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'entry', { mark });
    return { mark };
  }
}

const markOf = (item: SinkItem) => ((item as { fields?: { mark?: string } }).fields?.mark ?? '');
const bodyOf = (r: AwsRecord) => JSON.parse(r.body) as { id: string; payload: { fields: { mark: string } } };
/** Even marks go to the FIFO destination, odd ones to the standard one. */
const fifoMark = (mark: string) => Number(mark.split('-').pop()) % 2 === 0;

const services = [
  {
    name: 'sqs',
    endpoint: new SqsEndpoint() as AwsBatchEndpoint,
    token: 'SQS_CLIENT',
    client: (endpoint: string) => new SQSClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 }),
    destination: (url: string, name: string) => `${url}/000000000000/${name}`,
    sink: (to: (item: SinkItem) => string) => new SqsSink({ queueUrl: to }),
  },
  {
    name: 'sns',
    endpoint: new SnsEndpoint() as AwsBatchEndpoint,
    token: 'SNS_CLIENT',
    client: (endpoint: string) => new SNSClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 }),
    destination: (_url: string, name: string) => `arn:aws:sns:us-east-1:000000000000:${name}`,
    sink: (to: (item: SinkItem) => string) => new SnsSink({ topicArn: to }),
  },
] as const;

beforeAll(async () => {
  await Promise.all(services.map((s) => s.endpoint.start()));
});
afterAll(async () => {
  await Promise.all(services.map((s) => s.endpoint.stop()));
});

type Service = (typeof services)[number];

/** An app whose sink sends even marks to a FIFO destination and odd ones to a standard one, through `endpointUrl`. */
async function startWith(platform: (typeof platforms)[number], service: Service, endpointUrl: string) {
  const name = nextName();
  const fifo = service.destination(endpointUrl, `${name}.fifo`);
  const standard = service.destination(endpointUrl, name);
  const client = service.client(endpointUrl);
  const sink = service.sink((item) => (fifoMark(markOf(item)) ? fifo : standard));
  const started = await startApp(platform, {
    imports: [
      DeferredWorkModule.forRoot({
        sinks: [sink],
        sinkOptions: { [sink.name]: { flushIntervalMs: 5, initialBackoffMs: 50, maxBackoffMs: 300, maxAttempts: 500, writeTimeoutMs: WRITE_TIMEOUT_MS } },
      }),
    ],
    controllers: [MarkController],
    providers: [{ provide: service.token, useValue: client }],
  });
  const records = (destination: string) => service.endpoint.records.filter((r) => r.destination === destination);
  return {
    started,
    work: started.app.get(DeferredWork),
    close: async () => {
      await started.close();
      client.destroy();
    },
    /** FIFO: each mark exactly once. Standard: each mark at least once; returns how many copies there were. */
    check(marks: string[]): number {
      const fifoGot = records(fifo).map((r) => bodyOf(r).payload.fields.mark);
      expect(fifoGot.sort()).toEqual(marks.filter(fifoMark).sort());
      const got = records(standard);
      const byItem = new Map<string, AwsRecord[]>();
      for (const r of got) byItem.set(bodyOf(r).id, [...(byItem.get(bodyOf(r).id) ?? []), r]);
      expect([...new Set(got.map((r) => bodyOf(r).payload.fields.mark))].sort()).toEqual(marks.filter((m) => !fifoMark(m)).sort());
      expect(byItem.size).toBe(marks.filter((m) => !fifoMark(m)).length);
      // a copy is the same entry (same entry id, same body): a consumer tells it by the item id
      for (const copies of byItem.values()) {
        expect(new Set(copies.map((c) => c.entryId)).size).toBe(1);
        expect(new Set(copies.map((c) => c.body)).size).toBe(1);
      }
      return got.length - byItem.size;
    },
  };
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe.each(services)('$name sink through a bad link', (service) => {
  let proxy: TcpProxy;
  beforeEach(async () => {
    proxy = new TcpProxy(Number(new URL(service.endpoint.url).port));
    await proxy.listen();
  });
  afterEach(async () => {
    await proxy.close();
  });

  describe.each(platforms)('on $name', (platform) => {
    it('a slow link (answers later than the write timeout) mid-load: every response 2xx, FIFO each message once, standard copies counted and tellable apart, identity exact', async () => {
      const app = await startWith(platform, service, `http://127.0.0.1:${proxy.port}`);
      try {
        const marks = range(0, 150).map((i) => `${platform.name}-${i}`);
        const steps: Promise<void>[] = [];
        const statuses = load(app.started.url, marks.map((m) => `/entries/${m}`), 5, (done) => {
          if (done !== 30) return;
          proxy.delay(WRITE_TIMEOUT_MS + 150, 'answers');
          steps.push(wait(1500).then(() => proxy.delay(0)));
        });
        const { broken, checks } = await watchIdentity(app.work, Promise.all([statuses, ...steps]), service.name);
        expect((await statuses).every((s) => s === 200)).toBe(true);
        await eventually(async () => expect(app.work.stats().sinks[service.name]).toMatchObject({ accepted: 150, delivered: 150, pending: 0, dropped: 0, deadLettered: 0 }), 30_000);
        expect(broken).toEqual([]);
        expect(checks).toBeGreaterThan(0);
        expect(app.work.stats().sinks[service.name].failedWrites).toBeGreaterThan(0); // writes timed out
        const copies = app.check(marks);
        expect(copies).toBeGreaterThan(0); // the service took calls whose answers came too late
      } finally {
        proxy.delay(0);
        await app.close();
      }
    }, 60_000);

    it('a dead link (cut, then black-holed, then restored) mid-load: every response 2xx, everything delivered after, FIFO each message once, identity exact', async () => {
      const app = await startWith(platform, service, `http://127.0.0.1:${proxy.port}`);
      try {
        const marks = range(0, 200).map((i) => `${platform.name}-${i}`);
        const steps: Promise<void>[] = [];
        const statuses = load(app.started.url, marks.map((m) => `/entries/${m}`), 5, (done) => {
          if (done !== 30) return;
          steps.push(
            proxy
              .stop()
              .then(() => wait(1200))
              .then(() => proxy.start())
              .then(() => proxy.blackhole.on())
              .then(() => wait(1200))
              .then(() => proxy.blackhole.off()),
          );
        });
        const { broken, checks } = await watchIdentity(app.work, Promise.all([statuses, ...steps]).then(() => Promise.all(steps)), service.name);
        expect((await statuses).every((s) => s === 200)).toBe(true);
        await eventually(async () => expect(app.work.stats().sinks[service.name]).toMatchObject({ accepted: 200, delivered: 200, pending: 0, dropped: 0, deadLettered: 0 }), 30_000);
        expect(broken).toEqual([]);
        expect(checks).toBeGreaterThan(0);
        expect(app.work.stats().sinks[service.name].failedWrites).toBeGreaterThan(0);
        app.check(marks);
      } finally {
        await proxy.start();
        await app.close();
      }
    }, 60_000);
  });
});

describe.each(services)('$name sink: cold start while the endpoint is down', (service) => {
  it.each(platforms)('on $name: the app starts, answers 2xx, and delivers everything once the endpoint comes up', async (platform) => {
    // the endpoint behind a proxy that holds its port and drops every connection until the endpoint is
    // meant to come up: a port left free instead could be taken meanwhile by another test's server
    const late = service.name === 'sqs' ? new SqsEndpoint() : new SnsEndpoint();
    await late.start();
    const link = await TcpProxy.refusing(Number(new URL(late.url).port));
    const app = await startWith(platform, { ...service, endpoint: late } as Service, `http://${link.host}:${link.port}`);
    try {
      const marks = range(0, 60).map((i) => `cold-${platform.name}-${i}`);
      const statuses = load(app.started.url, marks.map((m) => `/entries/${m}`), 5);
      const { broken } = await watchIdentity(app.work, statuses, service.name);
      expect((await statuses).every((s) => s === 200)).toBe(true);
      await eventually(() => expect(app.work.stats().sinks[service.name].failedWrites).toBeGreaterThan(0), 10_000); // refused: retried
      expect(app.work.stats().sinks[service.name]).toMatchObject({ accepted: 60, delivered: 0, deadLettered: 0 });
      await link.start();
      const { broken: after } = await watchIdentity(
        app.work,
        eventually(async () => expect(app.work.stats().sinks[service.name]).toMatchObject({ accepted: 60, delivered: 60, pending: 0, dropped: 0, deadLettered: 0 }), 30_000),
        service.name,
      );
      expect([...broken, ...after]).toEqual([]);
      expect(app.check(marks)).toBe(0); // nothing reached the service before it was up: no copy
    } finally {
      await app.close();
      await link.close();
      await late.stop();
    }
  }, 60_000);
});
