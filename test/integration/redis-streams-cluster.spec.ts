import { Controller, Get, Param } from '@nestjs/common';
import { type Cluster, Command, Redis } from 'ioredis';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, type LogItem } from 'nestjs-deferred-work';
import { RedisStreamSink } from 'nestjs-deferred-work/redis-streams';
import { sinkAttachContext } from 'nestjs-deferred-work/testing';
import { eventually } from '../support/eventually';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';
import { RedisCluster } from '../support/redis-cluster';

/**
 * RedisStreamSink through an ioredis `Cluster` (a private three-node Redis Cluster): each request
 * defers one entry to each of three streams whose keys hash to slots of three different nodes, so
 * every batch holds keys no single Cluster pipeline may carry — N requests give exactly N entries per
 * stream, each read back once. On Express and Fastify.
 */
failOnUnhandledRejection();
const cluster = new RedisCluster(3);
let admin: Cluster;

beforeAll(async () => {
  await cluster.start();
  admin = cluster.client();
}, 30_000);
afterAll(async () => {
  admin?.disconnect();
  await cluster.dispose();
});

@Controller()
class FanOutController {
  @Get('fan-out/:mark')
  @AfterResponse()
  fanOut(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    for (const node of [0, 1, 2]) work.log('info', 'entry', { mark, node });
    return { mark };
  }
}

const fieldsOf = (flat: string[]) => Object.fromEntries(range(0, flat.length / 2).map((i) => [flat[2 * i], flat[2 * i + 1]]));

describe.each(platforms)('RedisStreamSink on a Redis Cluster ($name)', (platform) => {
  it('60 requests, one entry each to three streams on three nodes: 60 entries per stream, each item once', async () => {
    const streams = await cluster.keysPerNode(`dw-cluster-${platform.name}-${process.pid}`);
    // the premise: one pipeline holding these keys is refused by ioredis (they are served by different nodes)
    await expect(admin.pipeline().xadd(streams[0], '*', 'f', 'v').xadd(streams[1], '*', 'f', 'v').exec()).rejects.toThrow('same slots allocation group');
    await Promise.all(streams.map((s) => admin.del(s)));
    const client = cluster.client({ clusterRetryStrategy: () => 50 });
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new RedisStreamSink({ stream: (item) => streams[Number((item as LogItem).fields?.node)] })],
          sinkOptions: { 'redis-streams': { flushIntervalMs: 5, initialBackoffMs: 50, maxAttempts: 10 } },
        }),
      ],
      controllers: [FanOutController],
      providers: [{ provide: 'REDIS', useValue: client }],
    });
    const work = started.app.get(DeferredWork);
    try {
      await eventually(() => expect(client.status).toBe('ready'), 10_000); // else the first batches wait for it (retried): no failed write is expected here
      const marks = range(0, 60).map((i) => `${platform.name}-${i}`);
      const statuses = await load(started.url, marks.map((m) => `/fan-out/${m}`), 6);
      expect(statuses.every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 180, delivered: 180, pending: 0 }), 15_000);
      expect(work.stats().sinks['redis-streams']).toMatchObject({ deadLettered: 0, failedWrites: 0 });
      for (const [node, stream] of streams.entries()) {
        const entries = ((await admin.xrange(stream, '-', '+')) as Array<[string, string[]]>).map(([, flat]) => fieldsOf(flat));
        expect(entries).toHaveLength(60);
        expect(new Set(entries.map((e) => e.id)).size).toBe(60);
        const payloads = entries.map((e) => JSON.parse(e.payload) as { fields: { mark: string; node: number } });
        expect(payloads.map((p) => p.fields.mark).sort()).toEqual([...marks].sort());
        expect(payloads.every((p) => p.fields.node === node)).toBe(true);
      }
    } finally {
      await started.close();
      client.disconnect();
    }
  });

  it('a Cluster client with a keyPrefix: entries grouped by the slots of the prefixed keys, each written once', async () => {
    // three streams on one node unprefixed, on three nodes once prefixed: grouped by the wrong slots,
    // their entries would share a pipeline ioredis refuses
    const per = Math.ceil(16384 / 3);
    const nodeOf = (key: string) => Math.floor(new Command('xadd', [key]).getSlot()! / per);
    const streams: string[] = [];
    for (let n = 0; streams.length < 3 && n < 20_000; n++) {
      const key = `dw-prefixed-${platform.name}-${process.pid}-${n}`;
      if (streams.length === 0) streams.push(key);
      else if (nodeOf(key) === nodeOf(streams[0]) && !streams.some((s) => nodeOf(`app:${s}`) === nodeOf(`app:${key}`))) streams.push(key);
    }
    expect(streams).toHaveLength(3);
    const client = cluster.client({ clusterRetryStrategy: () => 50, keyPrefix: 'app:' });
    // the premise: through this client, one pipeline holding two of these streams is refused
    await expect(client.pipeline().xadd(streams[0], '*', 'f', 'v').xadd(streams[1], '*', 'f', 'v').exec()).rejects.toThrow('same slots allocation group');
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new RedisStreamSink({ stream: (item) => streams[Number((item as LogItem).fields?.node)] })],
          sinkOptions: { 'redis-streams': { flushIntervalMs: 5, initialBackoffMs: 50, maxAttempts: 3 } },
        }),
      ],
      controllers: [FanOutController],
      providers: [{ provide: 'REDIS', useValue: client }],
    });
    const work = started.app.get(DeferredWork);
    try {
      await eventually(() => expect(client.status).toBe('ready'), 10_000);
      const statuses = await load(started.url, range(0, 20).map((i) => `/fan-out/p${i}`), 4);
      expect(statuses.every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks['redis-streams']).toMatchObject({ accepted: 60, pending: 0 }), 15_000);
      expect(work.stats().sinks['redis-streams']).toMatchObject({ delivered: 60, deadLettered: 0, failedWrites: 0 });
      for (const stream of streams) expect(await admin.xlen(`app:${stream}`)).toBe(20);
    } finally {
      await started.close();
      client.disconnect();
    }
  });
});

describe('RedisStreamSink on a Redis Cluster: a slot moved to another node', () => {
  const entry = (stream: string, mark: string): LogItem => ({ kind: 'log', level: 'info', message: 'm', fields: { stream, mark }, when: 'always', createdAt: Date.now(), id: `dw-${mark}` });
  const slotOf = (key: string) => new Command('xadd', [key]).getSlot()!;

  it("its entries fail retryable (a MOVED inside the old node's pipeline, which ioredis does not follow), the slot map is reloaded, and the retry writes them on the new node; the others once", async () => {
    const per = Math.ceil(16384 / 3);
    const keys: string[] = []; // two streams node 0 serves, in different slots
    for (let n = 0; keys.length < 2; n++) {
      const key = `moved-${process.pid}-${n}`;
      if (Math.floor(slotOf(key) / per) === 0 && !keys.some((k) => slotOf(k) === slotOf(key))) keys.push(key);
    }
    const [moving, staying] = keys;
    const slot = slotOf(moving);
    const client = cluster.client();
    const nodes = cluster.ports().map((port) => new Redis({ host: '127.0.0.1', port }));
    try {
      await client.xadd(staying, '*', 'warm', 'up'); // the client's slot map is loaded
      const sink = new RedisStreamSink({ client, stream: (it) => String((it as LogItem).fields?.stream) });
      await sink.attach(sinkAttachContext());
      const target = String(await nodes[1].cluster('MYID'));
      for (const node of nodes) await node.cluster('SETSLOT', slot, 'NODE', target); // the slot (empty) now served by node 1
      const batch = [...range(0, 5).map((i) => entry(moving, `m${i}`)), ...range(0, 5).map((i) => entry(staying, `s${i}`))];
      const first = await sink.write(batch, { signal: new AbortController().signal, attempt: 1 });
      expect(first?.failed?.map((f) => [f.index, f.retryable])).toEqual(range(0, 5).map((i) => [i, true]));
      expect(String((first!.failed![0].error as Error).message)).toContain('MOVED');
      await eventually(async () => expect(client.slots[slot]?.[0]).toBe(`127.0.0.1:${cluster.ports()[1]}`), 5_000);
      expect(await sink.write(batch.slice(0, 5), { signal: new AbortController().signal, attempt: 2 })).toBeUndefined();
      expect(await client.xlen(moving)).toBe(5);
      expect(await client.xlen(staying)).toBe(6); // the warm-up entry and five, each once
    } finally {
      client.disconnect();
      for (const node of nodes) node.disconnect();
    }
  });
});
