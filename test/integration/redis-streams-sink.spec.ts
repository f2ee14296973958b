import { Controller, Get, Param } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, type LogItem } from 'nestjs-deferred-work';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import { eventually } from '../support/eventually';
import { load, range, watchIdentity } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { RedisServer } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * RedisStreamSink against a private redis-server (never the machine's Redis): N requests → N entries
 * read back by a real consumer group with the documented fields; the server stopped 2 s mid-load;
 * one refused entry in a batch of 100; a backlog at app.close(). On Express and Fastify.
 */
failOnUnhandledRejection();
const server = new RedisServer({ persistent: true });
let admin: Redis;
let n = 0;
const nextStream = () => `dw-streams-${process.pid}-${++n}`;

beforeAll(async () => {
  await server.start();
  admin = new Redis({ host: server.host, port: server.port });
});
afterAll(async () => {
  admin.disconnect();
  await server.dispose();
});

@Controller()
class StreamController {
  static stream = '';
  @Get('entries/:mark')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    work.log('info', 'entry', { mark });
    return { mark };
  }
}

/** Every entry of `stream`, read by a consumer group (XREADGROUP … XACK), as field objects. */
async function consume(stream: string): Promise<Array<Record<string, string>>> {
  await admin.xgroup('CREATE', stream, 'readers', '0', 'MKSTREAM').catch(() => undefined);
  const read: Array<Record<string, string>> = [];
  for (;;) {
    const reply = (await admin.xreadgroup('GROUP', 'readers', 'r1', 'COUNT', 1000, 'STREAMS', stream, '>')) as Array<[string, Array<[string, string[]]>]> | null;
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) return read;
    for (const [id, flat] of entries) {
      const fields: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
      read.push(fields);
      await admin.xack(stream, 'readers', id);
    }
  }
}

const markOf = (fields: Record<string, string>) => (JSON.parse(fields.payload) as { fields: { mark: string } }).fields.mark;

describe.each(platforms)('RedisStreamSink ($name)', (platform) => {
  const start = async (stream: string, options: Record<string, unknown> = {}) => {
    const client = new Redis({ host: server.host, port: server.port, retryStrategy: () => 50 });
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          correlation: { requestIdHeader: 'x-request-id' },
          sinks: [new RedisStreamSink({ stream, ...options })],
          sinkOptions: { 'redis-streams': { flushIntervalMs: 5, initialBackoffMs: 50, maxBackoffMs: 500, maxAttempts: 100, writeTimeoutMs: 2000 } },
        }),
      ],
      controllers: [StreamController],
      providers: [{ provide: 'REDIS', useValue: client }],
    });
    return { started, client, work: started.app.get(DeferredWork) };
  };

  it('101 requests give 101 entries, read back once each by a consumer group, with the documented fields', async () => {
    const stream = nextStream();
    const { started, client, work } = await start(stream);
    try {
      const marks = range(0, 100).map((i) => `${platform.name}-${i}`);
      const statuses = await load(started.url, marks.map((m) => `/entries/${m}`), 5);
      expect(statuses.every((s) => s === 200)).toBe(true);
      const tagged = await fetch(`${started.url}/entries/tagged`, { headers: { 'x-request-id': 'req-7' } });
      expect(tagged.status).toBe(200);
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 101, delivered: 101, pending: 0 }));
      const entries = await consume(stream);
      expect(entries.map(markOf).sort()).toEqual([...marks, 'tagged'].sort());
      expect(new Set(entries.map((e) => e.id)).size).toBe(101);
      expect(entries.find((e) => markOf(e) === 'tagged')).toMatchObject({ requestId: 'req-7' });
      for (const entry of entries) {
        expect(entry).toMatchObject({ kind: 'log', name: 'info' });
        expect(entry.id).toMatch(/^dw-/);
        expect(Number(entry.createdAt)).toBeGreaterThan(0);
        expect(JSON.parse(entry.payload)).toMatchObject({ message: 'entry' });
      }
    } finally {
      await started.close();
      client.disconnect();
    }
  });

  it('Redis stopped 2 s mid-load: every response 2xx, every entry there by id, the identity exact throughout', async () => {
    const stream = nextStream();
    const { started, client, work } = await start(stream);
    try {
      const marks = range(0, 150).map((i) => `${platform.name}-${i}`);
      const steps: Promise<void>[] = [];
      const statuses = load(started.url, marks.map((m) => `/entries/${m}`), 5, (done) => {
        if (done === 40) steps.push(server.stop().then(() => new Promise((resolve) => setTimeout(resolve, 2000))).then(() => server.start()));
      });
      const { broken, checks } = await watchIdentity(work, statuses, 'redis-streams');
      await Promise.all(steps);
      expect((await statuses).every((s) => s === 200)).toBe(true);
      expect(broken).toEqual([]);
      expect(checks).toBeGreaterThan(0);
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 150, delivered: 150, pending: 0, deadLettered: 0 }), 30_000);
      expect(work.stats().sinks['redis-streams'].failedWrites).toBeGreaterThan(0); // the outage was felt
      await admin.ping().catch(() => undefined);
      const entries = await consume(stream);
      // a consumer drops a copy by its id: what remains is each item once
      const byId = new Map(entries.map((e) => [e.id, markOf(e)]));
      expect(byId.size).toBe(150);
      expect([...byId.values()].sort()).toEqual([...marks].sort());
    } finally {
      await started.close();
      client.disconnect();
    }
  }, 60_000);

  it('a backlog at app.close() (SIGTERM) is drained before the client is quit', async () => {
    const stream = nextStream();
    const { started, client, work } = await start(stream);
    const marks = range(0, 300).map((i) => `${platform.name}-${i}`);
    const statuses = await load(started.url, marks.map((m) => `/entries/${m}`), 10);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const quit = client.quit(); // the app closes its client first: held until the drain
    await started.close();
    await quit;
    expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 300, delivered: 300, pending: 0 });
    await eventually(async () => expect(client.status).toBe('end')); // quit ran, after the drain
    expect((await consume(stream)).length).toBe(300);
  });
});

describe('RedisStreamSink writes', () => {
  const item = (mark: string, i: number): LogItem => ({ kind: 'log', level: 'info', message: 'm', fields: { mark }, when: 'always', createdAt: Date.now(), id: `dw-${mark}-${i}` });
  const signal = () => new AbortController().signal;

  it('one entry refused (a key that holds a string: WRONGTYPE) in a batch of 100: only it fails for good, 99 written once', async () => {
    const stream = nextStream();
    await admin.set(`${stream}:string`, 'not a stream');
    const client = new Redis({ host: server.host, port: server.port });
    await client.ping();
    const sink = new RedisStreamSink({ client, stream: (it) => ((it as LogItem).fields?.mark === 'r37' ? `${stream}:string` : stream) });
    try {
      await sink.attach(sinkAttachContext());
      const result = await sink.write(range(0, 100).map((i) => item(`r${i}`, i)), { signal: signal(), attempt: 1 });
      expect(result?.failed).toHaveLength(1);
      expect(result!.failed![0]).toMatchObject({ index: 37, retryable: false, code: 'WRONGTYPE' });
      expect(String((result!.failed![0].error as Error).message)).toContain('WRONGTYPE');
      const entries = await consume(stream);
      expect(entries).toHaveLength(99);
      expect(entries.map(markOf)).not.toContain('r37');
    } finally {
      client.disconnect();
    }
  });

  it('the link dies after Redis answered 30 of 50 XADDs: the write cut by its signal keeps the 30 confirmed, only the 20 unanswered fail (retryable)', async () => {
    const stream = nextStream();
    const proxy = new TcpProxy(server.port);
    await proxy.listen();
    const client = new Redis({ host: proxy.host, port: proxy.port, maxRetriesPerRequest: null });
    await client.ping();
    const sink = new RedisStreamSink({ client, stream });
    try {
      await sink.attach(sinkAttachContext());
      proxy.passAnswers(60); // 30 replies of two lines each ($<length>, then the id)
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('write timed out')), 1500);
      const result = await sink.write(range(0, 50).map((i) => item(`p${i}`, i)), { signal: controller.signal, attempt: 1 });
      expect(result?.failed?.map((f) => f.index)).toEqual(range(30, 50));
      expect(result!.failed!.every((f) => f.retryable === true)).toBe(true);
      expect((await consume(stream)).map(markOf)).toEqual(range(0, 50).map((i) => `p${i}`)); // Redis has all 50: only the 20 are sent again
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });

  it('a lazyConnect client is connected at attach, not by the first XADD: a write before Redis answers sends nothing, so nothing is appended behind its retry', async () => {
    const stream = nextStream();
    const proxy = new TcpProxy(server.port);
    await proxy.listen();
    await proxy.blackhole.on();
    const client = new Redis({ host: proxy.host, port: proxy.port, lazyConnect: true, maxRetriesPerRequest: null });
    expect(client.status).toBe('wait');
    const sink = new RedisStreamSink({ client, stream });
    const batch = range(0, 10).map((i) => item(`z${i}`, i));
    try {
      await sink.attach(sinkAttachContext());
      expect(client.status).not.toBe('wait');
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('write timed out')), 300);
      await expect(sink.write(batch, { signal: controller.signal, attempt: 1 })).rejects.toThrow(/Redis is not connected/);
      await proxy.blackhole.off();
      await eventually(async () => expect(client.status).toBe('ready'), 5_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await admin.xlen(stream)).toBe(0); // nothing was parked in the offline queue
      expect(await sink.write(batch, { signal: signal(), attempt: 2 })).toBeUndefined();
      expect((await consume(stream)).map(markOf)).toEqual(range(0, 10).map((i) => `z${i}`));
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });

  it('a batch of 120 goes out in one socket write per 50 entries, not one per XADD, and leaves the socket uncorked', async () => {
    const stream = nextStream();
    const client = new Redis({ host: server.host, port: server.port });
    await client.ping();
    const socket = client.stream as unknown as { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void; writableCorked: number };
    const writes = { single: 0, vectored: 0 };
    const write = socket._write.bind(socket);
    const writev = socket._writev.bind(socket);
    socket._write = (...args) => (writes.single++, write(...args));
    socket._writev = (...args) => (writes.vectored++, writev(...args));
    const sink = new RedisStreamSink({ client, stream });
    try {
      await sink.attach(sinkAttachContext());
      const result = await sink.write(range(0, 120).map((i) => item(`w${i}`, i)), { signal: signal(), attempt: 1 });
      expect(result).toBeUndefined();
      expect(writes.single + writes.vectored).toBe(3);
      expect(socket.writableCorked).toBe(0);
      expect((await consume(stream)).map(markOf)).toEqual(range(0, 120).map((i) => `w${i}`));
    } finally {
      client.disconnect();
    }
  });

  it.each([
    ['keyPrefix', { keyPrefix: 'app:' }, 'app:'],
    ['enableAutoPipelining', { enableAutoPipelining: true }, ''],
  ])('a client created with %s: every entry written once, under the key the client sends to', async (_, options, prefix) => {
    const stream = nextStream();
    const client = new Redis({ host: server.host, port: server.port, ...options });
    await client.ping();
    const sink = new RedisStreamSink({ client, stream });
    try {
      await sink.attach(sinkAttachContext());
      const result = await sink.write(range(0, 80).map((i) => item(`k${i}`, i)), { signal: signal(), attempt: 1 });
      expect(result).toBeUndefined();
      expect((await consume(`${prefix}${stream}`)).map(markOf)).toEqual(range(0, 80).map((i) => `k${i}`));
    } finally {
      client.disconnect();
    }
  });

  it('noMkStream: an entry for a missing stream fails for good; MAXLEN ~ trims the stream', async () => {
    const missing = nextStream();
    const client = new Redis({ host: server.host, port: server.port });
    await client.ping();
    try {
      const strict = new RedisStreamSink({ client, stream: missing, noMkStream: true });
      await strict.attach(sinkAttachContext());
      const refused = await strict.write([item('a', 0)], { signal: signal(), attempt: 1 });
      expect(refused?.failed?.[0]).toMatchObject({ index: 0, retryable: false });
      expect(String((refused!.failed![0].error as Error).message)).toContain('does not exist and noMkStream is set');
      expect(await admin.exists(missing)).toBe(0);
      const trimmed = nextStream();
      const capped = new RedisStreamSink({ client, stream: trimmed, maxLen: 10 });
      await capped.attach(sinkAttachContext());
      for (let b = 0; b < 5; b++) await capped.write(range(0, 200).map((i) => item(`t${b}-${i}`, i)), { signal: signal(), attempt: 1 });
      expect(await admin.xlen(trimmed)).toBeLessThan(1000);
    } finally {
      client.disconnect();
    }
  });
});
