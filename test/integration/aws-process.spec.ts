import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeferredStats } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { startLocalSqs } from '../support/local-sqs';
import { load, range } from '../support/load';
import { compileFixture, NodeApp } from '../support/node-app';
import { platforms } from '../support/platforms';
import { SnsEndpoint } from '../support/sns-endpoint';
import { SqsEndpoint } from '../support/sqs-endpoint';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * SqsSink and SnsSink in real processes (test/fixtures/aws-sink.app.ts), one case of each on Express and one on Fastify:
 * SIGTERM with a backlog held by a long linger, the app destroying its own client in onModuleDestroy →
 * every message sent before the exit (SQS: received back from local-aws-sqs; SNS: the local
 * endpoint's record). kill -9 with the disk spool on, for each service → a new process on the same directory
 * sends what the first spooled: on a FIFO queue or topic each message once (the service drops the replay by
 * its dedup id), on a standard one at least once (copies share the item id). SIGTERM while the link to
 * the service is a black hole (no answer at all) → the process ends by the shutdown deadline, exit 0,
 * reporting as undelivered exactly what the service never took.
 */
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let fixture: string;
let localSqs: { url: string; close(): Promise<void> };
let localUrl = '';
const sqsEndpoint = new SqsEndpoint();
const snsEndpoint = new SnsEndpoint();
const apps: NodeApp[] = [];
const dirs: string[] = [];
let n = 0;
const nextName = () => `dw-proc-${process.pid}-${++n}`;

beforeAll(async () => {
  fixture = compileFixture('aws-sink.app');
  localSqs = await startLocalSqs();
  localUrl = localSqs.url;
  await Promise.all([sqsEndpoint.start(), snsEndpoint.start()]);
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    app.kill();
    await app.exited;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  sqsEndpoint.fault = undefined;
  snsEndpoint.fault = undefined;
});
afterAll(async () => {
  await localSqs.close();
  await Promise.all([sqsEndpoint.stop(), snsEndpoint.stop()]);
});

async function start(env: Record<string, string>) {
  const app = new NodeApp(fixture, env);
  apps.push(app);
  const { port } = await app.json<{ port: number }>('port', 30_000);
  const url = `http://127.0.0.1:${port}`;
  return { app, url, stats: async () => (await (await fetch(`${url}/stats`)).json()) as DeferredStats };
}

interface Final {
  report: { drained: boolean; undelivered: Record<string, number>; inFlight?: Record<string, number> };
  stats: DeferredStats;
}

const numberOf = (body: string) => (JSON.parse(body) as { payload: { data: { n: number } } }).payload.data.n;

const [express, fastify] = platforms;

describe('AWS sinks as real processes', () => {
  const platform = express;
  it('SqsSink on Express: SIGTERM with 300 messages held back; the app destroys its client first; all 300 sent, exit 0', async () => {
    const client = new SQSClient({ endpoint: localUrl, region: 'us-east-1', credentials });
    const queueUrl = (await client.send(new CreateQueueCommand({ QueueName: nextName() }))).QueueUrl!;
    const { app, url } = await start({ SERVICE: 'sqs', ENDPOINT: localUrl, DESTINATION: queueUrl, ADAPTER: platform.name, FLUSH_MS: '60000' });
    expect((await load(url, range(0, 300).map((i) => `/job/${i}`), 10)).every((s) => s === 200)).toBe(true);
    app.signal('SIGTERM');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    const final = await app.json<Final>('report', 1000);
    expect(final.report).toEqual({ drained: true, undelivered: {} });
    expect(final.stats.sinks.sqs).toMatchObject({ accepted: 300, delivered: 300, pending: 0, deadLettered: 0 });
    const got: number[] = [];
    await eventually(
      async () => {
        const out = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }));
        got.push(...(out.Messages ?? []).map((m) => numberOf(m.Body!)));
        if (out.Messages?.length) await client.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: out.Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
        expect(got.length).toBeGreaterThanOrEqual(300);
      },
      10_000,
      0,
    );
    expect(got.sort((a, b) => a - b)).toEqual(range(0, 300));
    client.destroy();
  }, 60_000);

  it('SnsSink on Fastify: SIGTERM with 300 messages held back; all 300 published before the exit', async () => {
    const platform = fastify;
    const topicArn = `arn:aws:sns:us-east-1:000000000000:${nextName()}`;
    const { app, url } = await start({ SERVICE: 'sns', ENDPOINT: snsEndpoint.url, DESTINATION: topicArn, ADAPTER: platform.name, FLUSH_MS: '60000' });
    expect((await load(url, range(0, 300).map((i) => `/job/${i}`), 10)).every((s) => s === 200)).toBe(true);
    app.signal('SIGTERM');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    expect((await app.json<Final>('report', 1000)).report).toEqual({ drained: true, undelivered: {} });
    const got = snsEndpoint.records.filter((r) => r.destination === topicArn).map((r) => numberOf(r.body));
    expect(got.sort((a, b) => a - b)).toEqual(range(0, 300));
  }, 60_000);

  it.each([
    ['SqsSink on Express, a FIFO queue: each message once (the replay dropped by its dedup id)', 'sqs', express, true],
    ['SqsSink on Fastify, a standard queue: each message at least once', 'sqs', fastify, false],
    ['SnsSink on Fastify, a FIFO topic: each message once (the replay dropped by its dedup id)', 'sns', fastify, true],
    ['SnsSink on Express, a standard topic: each message at least once', 'sns', express, false],
  ] as const)('kill -9 with the spool on: %s', async (_name, service, platform, fifo) => {
    const dir = mkdtempSync(join(tmpdir(), 'dw-aws-spool-'));
    dirs.push(dir);
    const endpoint = service === 'sqs' ? sqsEndpoint : snsEndpoint;
    const name = `${nextName()}${fifo ? '.fifo' : ''}`;
    const destination = service === 'sqs' ? `${sqsEndpoint.url}/000000000000/${name}` : `arn:aws:sns:us-east-1:000000000000:${name}`;
    const env = { SERVICE: service, ENDPOINT: endpoint.url, DESTINATION: destination, ADAPTER: platform.name, SPOOL_DIR: dir };
    const sink = async (app: Awaited<ReturnType<typeof start>>) => (await app.stats()).sinks[service];
    const first = await start(env);
    // half goes through, then the service throttles: the rest stays in the spool
    expect((await load(first.url, range(0, 50).map((i) => `/job/${i}`), 10)).every((s) => s === 200)).toBe(true);
    await eventually(async () => expect((await sink(first)).delivered).toBe(50), 10_000, 20);
    endpoint.fault = 'throttle';
    expect((await load(first.url, range(50, 100).map((i) => `/job/${i}`), 10)).every((s) => s === 200)).toBe(true);
    await eventually(async () => expect((await sink(first)).accepted).toBe(100), 10_000, 20);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a few group commits: on disk
    first.app.signal('SIGKILL');
    expect(await first.app.exited).toEqual({ code: null, signal: 'SIGKILL' });
    endpoint.fault = undefined;
    const second = await start(env);
    await eventually(async () => expect(await sink(second)).toMatchObject({ pending: 0 }), 15_000, 50);
    const sent = () => endpoint.records.filter((r) => r.destination === destination).map((r) => numberOf(r.body));
    await eventually(() => expect(new Set(sent()).size).toBe(100), 15_000, 50);
    if (fifo) expect(sent().sort((a, b) => a - b)).toEqual(range(0, 100));
    else expect(new Set(sent())).toEqual(new Set(range(0, 100)));
  }, 60_000);

  it.each([
    ['SqsSink on Express', 'sqs', express],
    ['SnsSink on Fastify', 'sns', fastify],
  ] as const)('%s: SIGTERM during a black hole ends by the shutdown deadline (not hanging), reporting what was undelivered', async (_name, service, platform) => {
    const endpoint = service === 'sqs' ? sqsEndpoint : snsEndpoint;
    const proxy = new TcpProxy(Number(new URL(endpoint.url).port));
    await proxy.listen();
    try {
      const name = nextName();
      const destination = service === 'sqs' ? `${endpoint.url}/000000000000/${name}` : `arn:aws:sns:us-east-1:000000000000:${name}`;
      // the write timeout (2000 ms in the fixture) is longer than the shutdown deadline: the deadline ends it
      const { app, url, stats } = await start({ SERVICE: service, ENDPOINT: `http://127.0.0.1:${proxy.port}`, DESTINATION: destination, ADAPTER: platform.name, SHUTDOWN_TIMEOUT_MS: '1000' });
      expect((await load(url, range(0, 20).map((i) => `/job/${i}`), 5)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect((await stats()).sinks[service]).toMatchObject({ delivered: 20, pending: 0 }), 10_000, 20);
      await proxy.blackhole.on();
      expect((await load(url, range(20, 60).map((i) => `/job/${i}`), 5)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect((await stats()).sinks[service]).toMatchObject({ accepted: 60, pending: 40 }), 10_000, 20);
      app.signal('SIGTERM');
      const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
      expect(await Promise.race([app.exited, hung])).toEqual({ code: 0, signal: null });
      const final = await app.json<Final>('report', 1000);
      // A write black-holed at the deadline is reported apart: its messages may have been published.
      expect(final.report).toMatchObject({ drained: false, undelivered: { [service]: 40 } });
      expect(final.report.inFlight?.[service] ?? 0).toBeLessThanOrEqual(40);
      const s = final.stats.sinks[service];
      expect(s).toMatchObject({ accepted: 60, delivered: 20 });
      expect(s.accepted).toBe(s.delivered + s.pending + s.dropped + s.deadLettered);
      expect(endpoint.records.filter((r) => r.destination === destination).map((r) => numberOf(r.body)).sort((a, b) => a - b)).toEqual(range(0, 20));
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
