import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { type DeadLetter, type DeferredItem, type DeferredSink, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { RedisStreamDeadLetterStore } from 'nestjs-deferred-work/redis-streams';
import { deadLettersOutliveTheApp } from '../support/dead-letters-outlive';
import { failOnUnhandledRejection, platforms } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * RedisStreamDeadLetterStore against a private redis-server: records as stream entries, paged, filtered,
 * bounded by count and age, removed and purged; and in an app, dead letters that outlive it — a second
 * app on the same stream lists them and redrives each exactly once to the recovered receiver.
 */

const server = new RedisServer();
let redis: Redis;

beforeAll(async () => {
  await server.start(); // fails the file (never skips it) when redis-server is missing
  redis = new Redis({ host: server.host, port: server.port, lazyConnect: false });
});
afterAll(async () => {
  redis.disconnect();
  await server.dispose();
});
failOnUnhandledRejection();

let n = 0;
const key = () => `dlq-test:${process.pid}:${++n}`;

function record(i: number, over: Partial<DeadLetter> = {}) {
  const at = over.at ?? Date.now();
  return {
    item: { kind: 'job', id: `dw-${i}`, queue: 'q', name: 'j', data: { i }, createdAt: at, when: 'success' },
    sink: i % 2 === 0 ? 'even' : 'odd',
    reason: 'attempts-exhausted',
    error: 'refused',
    attempts: 2,
    at,
    ...over,
    id: `dw-${i}:${i % 2 === 0 ? 'even' : 'odd'}`,
    firstAt: at,
    redrives: 0,
  } as never;
}

describe('RedisStreamDeadLetterStore', () => {
  it('pages oldest first, filters, gets, counts, removes and purges', async () => {
    const store = new RedisStreamDeadLetterStore({ client: redis, key: key() });
    await store.add(Array.from({ length: 7 }, (_, i) => record(i)));
    const first = await store.list({ limit: 3 });
    const second = await store.list({ limit: 3, after: first.next });
    const third = await store.list({ limit: 3, after: second.next });
    expect([...first.records, ...second.records, ...third.records].map((r) => r.item.id)).toEqual(['dw-0', 'dw-1', 'dw-2', 'dw-3', 'dw-4', 'dw-5', 'dw-6']);
    expect(third.next).toBeUndefined();
    expect(await store.count({})).toBe(7);
    expect(await store.count({ sink: 'odd' })).toBe(3);
    expect(await store.get('dw-3:odd')).toMatchObject({ sink: 'odd', attempts: 2, item: { data: { i: 3 } } });
    expect(await store.get('dw-99:odd')).toBeUndefined();
    expect(await store.remove(['dw-3:odd', 'dw-5:odd', 'dw-99:odd'])).toBe(2);
    expect(await store.purge({ sink: 'even' })).toBe(4);
    expect((await store.list({})).records.map((r) => r.id)).toEqual(['dw-1:odd']);
  });

  it('a large add keeps every record, in order', async () => {
    const store = new RedisStreamDeadLetterStore({ client: redis, key: key() });
    await store.add(Array.from({ length: 250 }, (_, i) => record(i)));
    await store.add([record(250)]);
    expect((await store.list({ limit: 1000 })).records.map((r) => r.item.id)).toEqual(Array.from({ length: 251 }, (_, i) => `dw-${i}`));
  });

  it('holds maxCount and maxAgeMs, the oldest going first', async () => {
    const byCount = new RedisStreamDeadLetterStore({ client: redis, key: key(), maxCount: 3 });
    await byCount.add(Array.from({ length: 5 }, (_, i) => record(i)));
    expect((await byCount.list({})).records.map((r) => r.item.id)).toEqual(['dw-2', 'dw-3', 'dw-4']);
    const stream = key();
    const byAge = new RedisStreamDeadLetterStore({ client: redis, key: stream, maxAgeMs: 60_000 });
    // An entry id starts with its time: one written "two minutes ago", one now.
    await redis.xadd(stream, `${Date.now() - 120_000}-0`, 'id', 'dw-1:odd', 'record', JSON.stringify(record(1)));
    await byAge.add([record(2)]);
    expect((await byAge.list({})).records.map((r) => r.item.id)).toEqual(['dw-2']);
    expect(await byAge.count({})).toBe(1);
  });

  it('refuses options that are not a client', () => {
    expect(() => new RedisStreamDeadLetterStore({ client: {} as never })).toThrow('RedisStreamDeadLetterStore: option "client" must be an ioredis client (with call())');
  });
});

describe.each(platforms)('RedisStreamDeadLetterStore in an app on $name', (platform) => {
  it('keeps dead letters beyond the app; the next app redrives each exactly once to the recovered receiver', async () => {
    const stream = key();
    await deadLettersOutliveTheApp(platform, () => new RedisStreamDeadLetterStore({ client: redis, key: stream }));
  });
});

/** A sink whose writes never settle: at the shutdown deadline its items are dead-lettered (`shutdown`). */
class NeverSettlingSink implements DeferredSink {
  readonly name = 'stuck';
  async write(_batch: readonly DeferredItem[]): Promise<void> {
    return new Promise(() => {});
  }
}

describe('RedisStreamDeadLetterStore at shutdown', () => {
  it("the dead letters buried at the shutdown deadline are stored when app.close() resolves, even if the app's Redis client is dropped right after", async () => {
    const stream = key();
    const client = new Redis({ host: server.host, port: server.port });
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [DeferredWorkModule.forRoot({ sinks: [new NeverSettlingSink()], shutdownTimeoutMs: 300, deadLetter: { store: new RedisStreamDeadLetterStore({ client, key: stream }) } })],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      const work = app.get(DeferredWork);
      for (let i = 0; i < 300; i++) work.log('info', 'x', { i });
      await app.close();
      // what a process does next: exit, or close its client without waiting (disconnect drops what is not sent)
      client.disconnect();
      expect(work.stats()).toMatchObject({ accepted: 300, deadLettered: 300 });
      expect(await redis.xlen(stream)).toBe(300);
    } finally {
      client.disconnect();
    }
  });
});
