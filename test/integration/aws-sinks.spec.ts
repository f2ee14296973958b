import { getMaxListeners } from 'node:events';
import { SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Controller, Get, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, type LogItem } from 'nestjs-deferred-work';
import { SnsSink } from 'nestjs-deferred-work/sns';
import { SqsSink } from 'nestjs-deferred-work/sqs';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import type { AwsBatchEndpoint } from '../support/aws-batch-rules';
import { eventually } from '../support/eventually';
import { receiveAll, startLocalSqs } from '../support/local-sqs';
import { load, range, watchIdentity } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { SnsEndpoint } from '../support/sns-endpoint';
import { SqsEndpoint } from '../support/sqs-endpoint';

/**
 * SqsSink and SnsSink through the real `@aws-sdk/client-sqs` / `client-sns` over real HTTP, on Express
 * and Fastify. SQS: N requests → N messages received back from local-aws-sqs (a local SQS server), a
 * FIFO replay dropped by its dedup id, an entry SQS refuses dead-lettered alone. SQS and SNS: the local
 * protocol endpoint (test/support/sqs-endpoint.ts, sns-endpoint.ts) throttling, then failing with 500s,
 * then back mid-load; entries failed inside a batch answer; an oversized item refused when deferred; a
 * backlog drained at app.close() before the app's client is destroyed.
 */
failOnUnhandledRejection();
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let localSqs: { url: string; close(): Promise<void> };
let localSqsUrl = '';
const sqsEndpoint = new SqsEndpoint();
const snsEndpoint = new SnsEndpoint();
let n = 0;
const nextName = () => `dw-${process.pid}-${++n}`;

beforeAll(async () => {
  localSqs = await startLocalSqs();
  localSqsUrl = localSqs.url;
  await Promise.all([sqsEndpoint.start(), snsEndpoint.start()]);
});
afterAll(async () => {
  await localSqs.close();
  await Promise.all([sqsEndpoint.stop(), snsEndpoint.stop()]);
});

const sqsClient = (endpoint: string) => new SQSClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 2 });
const snsClient = (endpoint: string) => new SNSClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 2 });

async function createQueue(client: SQSClient, name: string, fifo = false): Promise<string> {
  const out = await client.send(new CreateQueueCommand({ QueueName: fifo ? `${name}.fifo` : name, Attributes: fifo ? { FifoQueue: 'true' } : undefined }));
  return out.QueueUrl!;
}

/** Every message of the queue, received and deleted, as bodies with their attributes. */
async function receiveBodies(client: SQSClient, queueUrl: string): Promise<Array<{ body: Record<string, unknown>; attributes: Record<string, string | undefined> }>> {
  return (await receiveAll(client, queueUrl)).map((m) => ({
    body: JSON.parse(m.Body!) as Record<string, unknown>,
    attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue])),
  }));
}

@Controller()
class MarkController {
  @Get('entries/:mark')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'entry', { mark, ...(mark.startsWith('big') ? { blob: 'x'.repeat(300_000) } : {}) });
    return { mark };
  }
}

const markOf = (body: string | Record<string, unknown>) => ((typeof body === 'string' ? JSON.parse(body) : body) as { payload: { fields: { mark: string } } }).payload.fields.mark;

/** The two sinks, each with its local protocol endpoint. */
const services = [
  {
    name: 'sqs',
    endpoint: sqsEndpoint as AwsBatchEndpoint,
    token: 'SQS_CLIENT',
    client: () => sqsClient(sqsEndpoint.url),
    sink: (destination: string, options: Record<string, unknown> = {}) => new SqsSink({ queueUrl: `${sqsEndpoint.url}/000000000000/${destination}`, ...options }),
    destination: (name: string) => `${sqsEndpoint.url}/000000000000/${name}`,
  },
  {
    name: 'sns',
    endpoint: snsEndpoint as AwsBatchEndpoint,
    token: 'SNS_CLIENT',
    client: () => snsClient(snsEndpoint.url),
    sink: (destination: string, options: Record<string, unknown> = {}) => new SnsSink({ topicArn: `arn:aws:sns:us-east-1:000000000000:${destination}`, ...options }),
    destination: (name: string) => `arn:aws:sns:us-east-1:000000000000:${name}`,
  },
] as const;

async function startWith(platform: (typeof platforms)[number], sink: SqsSink | SnsSink, token: string, client: unknown) {
  const started = await startApp(platform, {
    imports: [
      DeferredWorkModule.forRoot({
        correlation: { requestIdHeader: 'x-request-id' },
        sinks: [sink],
        sinkOptions: { [sink.name]: { flushIntervalMs: 5, initialBackoffMs: 50, maxBackoffMs: 400, maxAttempts: 200, writeTimeoutMs: 5000 } },
      }),
    ],
    controllers: [MarkController],
    providers: [{ provide: token, useValue: client }],
  });
  return { started, work: started.app.get(DeferredWork) };
}

describe.each(platforms)('SqsSink against local-aws-sqs ($name)', (platform) => {
  it('101 requests give 101 messages received back once each, with requestId as a message attribute', async () => {
    const client = sqsClient(localSqsUrl);
    const queueUrl = await createQueue(client, nextName());
    const { started, work } = await startWith(platform, new SqsSink({ queueUrl }), 'SQS_CLIENT', client);
    try {
      const marks = range(0, 100).map((i) => `${platform.name}-${i}`);
      expect((await load(started.url, marks.map((m) => `/entries/${m}`), 5)).every((s) => s === 200)).toBe(true);
      expect((await fetch(`${started.url}/entries/tagged`, { headers: { 'x-request-id': 'req-7' } })).status).toBe(200);
      await eventually(async () => expect(work.stats().sinks.sqs).toMatchObject({ accepted: 101, delivered: 101, pending: 0 }), 10_000);
      const messages = await receiveBodies(client, queueUrl);
      expect(messages.map((m) => markOf(m.body)).sort()).toEqual([...marks, 'tagged'].sort());
      expect(new Set(messages.map((m) => m.body.id)).size).toBe(101);
      expect(messages.find((m) => markOf(m.body) === 'tagged')!.attributes).toMatchObject({ requestId: 'req-7' });
      expect(messages[0].body).toMatchObject({ kind: 'log', name: 'info', payload: { message: 'entry' } });
    } finally {
      await started.close();
      client.destroy();
    }
  });
});

describe('SqsSink writes against local-aws-sqs', () => {
  const item = (mark: string, extra: Partial<LogItem> = {}): LogItem => ({ kind: 'log', level: 'info', message: 'm', fields: { mark }, when: 'always', createdAt: Date.now(), id: `dw-${mark}`, ...extra });
  const context = () => ({ signal: new AbortController().signal, attempt: 1 });

  it('a FIFO queue: group and dedup ids set, a replay of the same items (same ids) is dropped by SQS', async () => {
    const client = sqsClient(localSqsUrl);
    const queueUrl = await createQueue(client, nextName(), true);
    const sink = new SqsSink({ client, queueUrl });
    await sink.attach(sinkAttachContext());
    const batch = range(0, 25).map((i) => item(`f${i}`));
    expect(await sink.write(batch, context())).toBeUndefined();
    expect(await sink.write(batch.map((b) => ({ ...b })), context())).toBeUndefined(); // a spool replay: copies with the same ids
    const messages = await receiveBodies(client, queueUrl);
    expect(messages.map((m) => markOf(m.body)).sort()).toEqual(batch.map((b) => (b.fields as { mark: string }).mark).sort());
    client.destroy();
  });

  it('one entry SQS refuses (a Number attribute that is not a number) in a batch of 30: only it fails for good, with its code; 29 sent once', async () => {
    const client = sqsClient(localSqsUrl);
    const queueUrl = await createQueue(client, nextName());
    const sink = new SqsSink({ client, queueUrl, messageAttributes: (it) => ((it as LogItem).fields?.mark === 'b17' ? { count: { DataType: 'Number', StringValue: 'seventeen' } } : ({} as Record<string, never>)) });
    await sink.attach(sinkAttachContext());
    const result = await sink.write(range(0, 30).map((i) => item(`b${i}`)), context());
    expect(result?.failed).toHaveLength(1);
    expect(result!.failed![0]).toMatchObject({ index: 17, retryable: false, code: 'InvalidParameterValue' });
    expect((result!.failed![0].error as Error).message).toContain('SQS refused the message');
    const messages = await receiveBodies(client, queueUrl);
    expect(messages).toHaveLength(29);
    expect(messages.map((m) => markOf(m.body))).not.toContain('b17');
    client.destroy();
  });
});

describe.each(services)('$name sink against the local protocol endpoint', (service) => {
  describe.each(platforms)('on $name', (platform) => {
    it('throttled, then 500s, then back mid-load: every response 2xx, every message once, the identity exact throughout', async () => {
      const name = nextName();
      const client = service.client();
      const { started, work } = await startWith(platform, service.sink(name), service.token, client);
      try {
        const marks = range(0, 150).map((i) => `${platform.name}-${i}`);
        const steps: Promise<void>[] = [];
        const statuses = load(started.url, marks.map((m) => `/entries/${m}`), 5, (done) => {
          if (done !== 30) return;
          service.endpoint.fault = 'throttle';
          steps.push(
            new Promise<void>((resolve) => setTimeout(resolve, 800))
              .then(() => void (service.endpoint.fault = 'error'))
              .then(() => new Promise<void>((resolve) => setTimeout(resolve, 800)))
              .then(() => void (service.endpoint.fault = undefined)),
          );
        });
        const { broken, checks } = await watchIdentity(work, statuses, service.name);
        await Promise.all(steps);
        expect((await statuses).every((s) => s === 200)).toBe(true);
        expect(broken).toEqual([]);
        expect(checks).toBeGreaterThan(0);
        await eventually(async () => expect(work.stats().sinks[service.name]).toMatchObject({ accepted: 150, delivered: 150, pending: 0, deadLettered: 0 }), 30_000);
        expect(work.stats().sinks[service.name].failedWrites).toBeGreaterThan(0); // the faults were felt
        const got = service.endpoint.records.filter((r) => r.destination === service.destination(name)).map((r) => markOf(r.body));
        expect(got.sort()).toEqual([...marks].sort()); // each once: a refused call wrote nothing
      } finally {
        service.endpoint.fault = undefined;
        await started.close();
        client.destroy();
      }
    }, 60_000);

    it('an oversized item is refused when deferred; a backlog is drained at app.close() before the app destroys its client', async () => {
      const name = nextName();
      const client = service.client();
      const { started, work } = await startWith(platform, service.sink(name, { maxPayloadBytes: 262_144 }), service.token, client);
      const marks = range(0, 200).map((i) => `${platform.name}-${i}`);
      expect((await load(started.url, [...marks.map((m) => `/entries/${m}`), '/entries/big-1'], 10)).every((s) => s === 200)).toBe(true);
      expect(work.stats().rejected).toBe(1);
      client.destroy(); // the app destroys its client first: held until the drain
      await started.close();
      expect(work.stats().sinks[service.name]).toMatchObject({ accepted: 200, delivered: 200, pending: 0 });
      const got = service.endpoint.records.filter((r) => r.destination === service.destination(name)).map((r) => markOf(r.body));
      expect(got.sort()).toEqual([...marks].sort());
    });
  });

  describe('writes', () => {
    const item = (mark: string): LogItem => ({ kind: 'log', level: 'info', message: 'm', fields: { mark }, when: 'always', createdAt: Date.now(), id: `dw-${service.name}-${mark}-${n}` });
    const context = () => ({ signal: new AbortController().signal, attempt: 1 });

    it("the service's own throttling answer (SNS: 429 Throttled; SQS: KmsThrottled) fails the call as retryable; sent again once it passes, each entry arrives once", async () => {
      const name = nextName();
      const client = service.client();
      const sink = service.sink(name, { client });
      await sink.attach(sinkAttachContext());
      const batch = range(0, 12).map((i) => item(`t${i}`));
      try {
        service.endpoint.fault = 'service-throttle';
        const throttled = await sink.write(batch, context());
        expect(throttled?.failed).toHaveLength(12);
        expect(throttled!.failed!.every((f) => f.retryable === true)).toBe(true);
        expect(throttled!.failed![0].code).toBe(service.name === 'sns' ? 'Throttled' : 'KMS.ThrottlingException');
        service.endpoint.fault = undefined;
        expect(await sink.write(batch, { ...context(), attempt: 2 })).toBeUndefined();
        const got = service.endpoint.records.filter((r) => r.destination === service.destination(name)).map((r) => markOf(r.body));
        expect(got.sort()).toEqual(batch.map((b) => (b.fields as { mark: string }).mark).sort());
      } finally {
        service.endpoint.fault = undefined;
        client.destroy();
      }
    });

    it("concurrency 16: the write's signal takes the SDK's listeners of every call in flight without Node's leak warning (its limit raised), every entry once", async () => {
      const name = nextName();
      const client = service.client();
      const sink = service.sink(name, { client, concurrency: 16 });
      await sink.attach(sinkAttachContext());
      try {
        const batch = range(0, 160).map((i) => item(`c${i}`));
        const ctx = context();
        expect(getMaxListeners(ctx.signal)).toBe(10); // Node's default: an 11th 'abort' listener would print MaxListenersExceededWarning
        expect(await sink.write(batch, ctx)).toBeUndefined();
        expect(getMaxListeners(ctx.signal)).toBeGreaterThan(16);
        const got = service.endpoint.records.filter((r) => r.destination === service.destination(name)).map((r) => markOf(r.body));
        expect(got.sort()).toEqual(batch.map((b) => (b.fields as { mark: string }).mark).sort());
      } finally {
        client.destroy();
      }
    });

    it('entries failed inside an answer: the sender fault dead-lettered with its code, the service fault retried alone, successes never resent', async () => {
      const name = nextName();
      const client = service.client();
      const sink = service.sink(name, { client });
      await sink.attach(sinkAttachContext());
      let internal = 0;
      service.endpoint.failEntry = (entry) => {
        const mark = markOf(entry.body);
        if (mark === 'e3') return { Code: 'InvalidParameter', Message: 'Invalid parameter: bad entry', SenderFault: true };
        if (mark === 'e7' && internal++ === 0) return { Code: 'InternalError', Message: 'try again', SenderFault: false };
        return undefined;
      };
      try {
        const batch = range(0, 25).map((i) => item(`e${i}`));
        const first = await sink.write(batch, context());
        expect(first?.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([
          [3, false, 'InvalidParameter'],
          [7, true, 'InternalError'],
        ]);
        const retried = await sink.write([batch[7]], { ...context(), attempt: 2 });
        expect(retried).toBeUndefined();
        const got = service.endpoint.records.filter((r) => r.destination === service.destination(name)).map((r) => markOf(r.body));
        expect(got.sort()).toEqual(batch.map((b) => (b.fields as { mark: string }).mark).filter((m) => m !== 'e3').sort());
      } finally {
        service.endpoint.failEntry = undefined;
        client.destroy();
      }
    });
  });
});
