import { readFileSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import * as path from 'node:path';
import type { LogItem, SinkItem } from '../../core/items/deferred-item.interface';
import { itemParts } from '../kit/item-parts';
import { SinkConfigError } from '../kit/sink-config.error';
import { defaultFieldArgs, defaultFields, defaultStream, xaddArgs, xaddHead } from './redis-stream-entries';
import { REDIS_STREAM_PROCESSOR_DEFAULTS, REDIS_STREAM_SINK_DEFAULTS } from './redis-stream-sink.options';
import { ENTRIES_PER_SEND, RedisStreamSink } from './redis-stream.sink';

const log = (fields?: Record<string, unknown>): LogItem => ({ kind: 'log', level: 'info', message: 'hello', fields, when: 'always', createdAt: 1_700_000_000_000, id: 'dw-1' });
const signal = () => new AbortController().signal;

/**
 * A fake ioredis client: records the XADDs of each send — those issued while its socket is corked (a
 * Cluster's: each pipeline) — and answers them with `replies` once the send is complete.
 */
function fakeRedis(replies: (args: string[][]) => Array<[Error | null, unknown]>, status = 'ready') {
  const sent: string[][][] = [];
  let open: { commands: string[][]; answers: Array<(reply: [Error | null, unknown] | undefined) => void> } | undefined;
  const flatten = (args: Array<string | readonly string[]>) => args.flat() as string[];
  const client = {
    status,
    quit: async () => 'OK',
    stream: {
      writable: true,
      corked: 0,
      cork() {
        this.corked++;
        open = { commands: [], answers: [] };
      },
      uncork() {
        this.corked--;
        const send = open!;
        open = undefined;
        sent.push(send.commands);
        const answers = replies(send.commands);
        send.answers.forEach((answer, i) => answer(answers[i]));
      },
    },
    xadd(...args: Array<string | readonly string[]>) {
      if (!open) throw new Error('an XADD issued outside a corked send');
      open.commands.push(flatten(args));
      return new Promise((resolve, reject) => open!.answers.push((reply) => (reply === undefined ? reject(new Error('no reply')) : reply[0] ? reject(reply[0]) : resolve(reply[1]))));
    },
    pipeline(this: { isCluster?: boolean; options?: { enableAutoPipelining?: boolean } }) {
      if (!this.isCluster && !this.options?.enableAutoPipelining) throw new Error('a pipeline asked of a standalone client');
      const commands: string[][] = [];
      return {
        xadd: (...args: Array<string | readonly string[]>) => void commands.push(flatten(args)),
        exec: async () => {
          sent.push(commands);
          return replies(commands);
        },
      };
    },
  };
  return { client, sent };
}

const attachContext = { resolve: () => undefined, holdOpen: () => ({ closed: false }), providers: () => [], warn: () => undefined } as never;

describe('RedisStreamSink options', () => {
  it('defaults: the client under REDIS, every kind, deferred:<kind>', () => {
    const sink = new RedisStreamSink();
    expect(sink.name).toBe('redis-streams');
    expect(sink.kinds).toEqual(['job', 'log', 'metric']);
    expect(sink.defaults).toBe(REDIS_STREAM_PROCESSOR_DEFAULTS);
    expect(defaultStream(log())).toBe('deferred:log');
  });

  it.each([
    [{ name: '' }, 'option "name" must be a non-empty string'],
    [{ stream: '' }, 'option "stream" must be a non-empty string'],
    [{ stream: 7 }, 'option "stream" must be a non-empty string'],
    [{ fields: 'id' }, 'option "fields" must be a function of the item'],
    [{ maxLen: 0 }, 'option "maxLen" must be a whole number >= 1'],
    [{ maxLen: 1.5 }, 'option "maxLen" must be a whole number >= 1'],
    [{ maxAgeMs: -1 }, 'option "maxAgeMs" must be a whole number >= 1'],
    [{ maxLen: 10, maxAgeMs: 1000 }, 'option "maxLen" cannot be used with "maxAgeMs"'],
    [{ noMkStream: 'yes' }, 'option "noMkStream" must be true or false'],
    [{ kinds: ['callback'] }, "option \"kinds\" must be a non-empty array of 'job', 'log', 'metric'"],
  ])('%j is refused: %s', (options, message) => {
    expect(() => new RedisStreamSink(options as never)).toThrow(SinkConfigError);
    expect(() => new RedisStreamSink(options as never)).toThrow(message);
  });

  it('a token with nothing behind it fails the bootstrap, naming the token', async () => {
    await expect(new RedisStreamSink({ client: 'CACHE' }).attach(attachContext)).rejects.toThrow('RedisStreamSink "redis-streams": no client found as "CACHE" (nothing is registered)');
  });

  it('a queue whose connection is not ioredis: Bull\'s fails the bootstrap, BullMQ\'s (known once ready) fails each write, naming the queue', async () => {
    const nodeRedis = { sendCommand: async () => 'OK', isOpen: true };
    const bull = { name: 'orders', add: async () => ({}), isReady: async () => undefined, client: nodeRedis };
    await expect(new RedisStreamSink({ client: bull }).attach(attachContext)).rejects.toThrow('the connection of queue "orders" is not an ioredis client');
    // BullMQ 6's own node-redis adapter: it has pipeline, xadd and defineCommand too (in BullMQ's shapes)
    const { createNodeRedisClient } = (await import('bullmq')) as unknown as { createNodeRedisClient(raw: object): object };
    const adapter = createNodeRedisClient(Object.assign(new EventEmitter(), nodeRedis, { isReady: true }));
    const bullmq = { name: 'events', add: async () => ({}), waitUntilReady: async () => undefined, getBackend: () => ({ client: Promise.resolve(adapter) }) };
    const sink = new RedisStreamSink({ client: bullmq });
    await sink.attach(attachContext);
    await expect(sink.write([log()], { signal: signal(), attempt: 1 })).rejects.toMatchObject({
      retryable: true,
      message: expect.stringContaining('the connection of queue "events" is not an ioredis client'),
    });
  });

  it('refuses writes before it is attached, for good', async () => {
    await expect(new RedisStreamSink().write([log()], { signal: signal(), attempt: 1 })).rejects.toMatchObject({ retryable: false });
  });

  it('refuses, when deferred, fields that are not strings and a stream that is not one', () => {
    expect(() => new RedisStreamSink({ fields: () => ({ id: 1 }) as never }).validate(log())).toThrow('returned a value that is not a string for "id"');
    expect(() => new RedisStreamSink({ stream: () => '' }).validate(log())).toThrow('stream(item) must return a non-empty string');
  });
});

describe('RedisStreamSink entries', () => {
  it('the default fields: id, kind, name, payload as JSON, createdAt, requestId and traceparent from the correlation', () => {
    const item: SinkItem = { ...log({ order: 7 }), context: 'Orders', correlation: { requestId: 'r1', traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 } };
    expect(defaultFields(item)).toEqual({
      id: 'dw-1',
      kind: 'log',
      name: 'info',
      payload: JSON.stringify({ message: 'hello', fields: { order: 7 }, context: 'Orders' }),
      createdAt: '1700000000000',
      requestId: 'r1',
      traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    });
    expect(defaultFields(log())).not.toHaveProperty('requestId');
  });

  it.each<[string, SinkItem]>([
    ['a log record', { ...log({ order: 7 }), context: 'Orders', correlation: { requestId: 'r1', traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) } }],
    ['a log record without fields', log()],
    ['a job', { kind: 'job', queue: 'mail', name: 'welcome', data: { to: 'a@b' }, opts: { attempts: 2 }, when: 'success', createdAt: 1, id: 'dw-2' }],
    ['a job without data or opts', { kind: 'job', queue: 'mail', name: 'welcome', data: undefined, when: 'success', createdAt: 1, id: 'dw-3' }],
    ['a metric', { kind: 'metric', type: 'counter', name: 'orders', value: 1, tags: { shop: 'x' }, when: 'always', createdAt: 1, id: 'dw-4' } as SinkItem],
  ])('the default fields as XADD arguments are the default fields, in their order (%s)', (_, item) => {
    expect(defaultFieldArgs(item)).toEqual(Object.entries(defaultFields(item)).flat());
    expect(defaultFields(item)).toMatchObject({ name: itemParts(item).name, payload: JSON.stringify(itemParts(item).payload) });
  });

  it('XADD arguments: NOMKSTREAM, MAXLEN ~ n or MINID ~ <now - age>-0, then * and the fields', () => {
    expect(xaddArgs('s', { id: 'x' }, undefined, false, 0)).toEqual(['s', '*', 'id', 'x']);
    expect(xaddArgs('s', { id: 'x' }, { maxLen: 10 }, true, 0)).toEqual(['s', 'NOMKSTREAM', 'MAXLEN', '~', '10', '*', 'id', 'x']);
    expect(xaddArgs('s', { id: 'x' }, { maxAgeMs: 1000 }, false, 5000)).toEqual(['s', 'MINID', '~', '4000-0', '*', 'id', 'x']);
    expect(xaddHead({ maxLen: 10 }, false, 0)).toEqual(['MAXLEN', '~', '10', '*']);
  });
});

describe('RedisStreamSink writes', () => {
  it('one socket write per batch (one XADD per entry, the socket corked), several streams; per-entry failures: WRONGTYPE for good, LOADING and a lost connection retried, a null reply (NOMKSTREAM) for good', async () => {
    const { client, sent } = fakeRedis(() => [
      [null, '1-0'],
      [new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), undefined],
      [new Error('LOADING Redis is loading the dataset in memory'), undefined],
      [new Error('Connection is closed.'), undefined],
      [null, null],
    ]);
    const sink = new RedisStreamSink({ client, stream: (item) => `s:${(item as LogItem).fields?.n}` });
    await sink.attach(attachContext);
    const batch = [0, 1, 2, 3, 4].map((n) => ({ ...log({ n }), id: `dw-${n}` }));
    const result = await sink.write(batch, { signal: signal(), attempt: 1 });
    expect(sent).toHaveLength(1);
    expect(sent[0].map((args) => args[0])).toEqual(['s:0', 's:1', 's:2', 's:3', 's:4']);
    expect(client.stream.corked).toBe(0);
    expect(result?.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([
      [1, false, 'WRONGTYPE'],
      [2, true, 'LOADING'],
      [3, true, 'ENOTCONN'], // ioredis's codeless "Connection is closed."
      [4, false, undefined],
    ]);
  });

  it('a Cluster client: one pipeline per group of nodes serving the streams\' slots ({hash tags} share a slot), outcomes at the batch\'s indexes', async () => {
    const { client, sent } = fakeRedis((commands) => commands.map((args) => (args[0] === '{b}:2' ? [new Error('TRYAGAIN Multiple keys request during rehashing of slot'), undefined] : [null, '1-0'])));
    const slots: string[][] = [];
    const { Command } = await import('ioredis');
    const slotOf = (key: string) => new Command('xadd', [key]).getSlot();
    slots[slotOf('{a}')] = ['n1:1', 'n2:1'];
    slots[slotOf('{b}')] = ['n2:1'];
    const sink = new RedisStreamSink({ client: Object.assign(client, { isCluster: true, slots }), stream: (item) => `${(item as LogItem).fields?.s}` });
    await sink.attach(attachContext);
    const batch = ['{a}:1', '{b}:1', '{a}:2', '{b}:2'].map((s, n) => ({ ...log({ s }), id: `dw-${n}` }));
    const result = await sink.write(batch, { signal: signal(), attempt: 1 });
    expect(sent.map((pipeline) => pipeline.map((args) => args[0]))).toEqual([
      ['{a}:1', '{a}:2'],
      ['{b}:1', '{b}:2'],
    ]);
    expect(result?.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([[3, true, 'TRYAGAIN']]);
  });

  it('an XADD that throws as it is issued: the socket uncorked, the entries issued before it answered, it and the rest retried', async () => {
    const { client, sent } = fakeRedis((commands) => commands.map((): [null, string] => [null, '1-0']));
    const xadd = client.xadd.bind(client);
    let calls = 0;
    client.xadd = (...args) => (++calls === 3 ? (() => { throw new TypeError('the client broke'); })() : xadd(...args));
    const sink = new RedisStreamSink({ client });
    await sink.attach(attachContext);
    const result = await sink.write([0, 1, 2, 3].map((n) => ({ ...log({ n }), id: `dw-${n}` })), { signal: signal(), attempt: 1 });
    expect(client.stream.corked).toBe(0);
    expect(sent).toEqual([[expect.any(Array), expect.any(Array)]]);
    expect(result?.failed?.map((f) => [f.index, f.retryable])).toEqual([
      [2, true],
      [3, true],
    ]);
    expect(String(result?.failed?.[0].error)).toContain('could not be sent: the client broke');
  });

  it('a client created with enableAutoPipelining: its own pipeline per send (ioredis would auto-pipeline the XADDs a turn later)', async () => {
    const { client, sent } = fakeRedis((commands) => commands.map((): [null, string] => [null, '1-0']));
    const sink = new RedisStreamSink({ client: Object.assign(client, { options: { enableAutoPipelining: true } }) });
    await sink.attach(attachContext);
    await expect(sink.write([log(), { ...log(), id: 'dw-2' }], { signal: signal(), attempt: 1 })).resolves.toBeUndefined();
    expect(sent).toHaveLength(1);
    expect(client.stream.corked).toBe(0);
  });

  it('sends nothing while the client is not connected (no offline-queue copies)', async () => {
    const { client, sent } = fakeRedis(() => [], 'reconnecting');
    const sink = new RedisStreamSink({ client });
    await sink.attach(attachContext);
    await expect(sink.write([log()], { signal: signal(), attempt: 1 })).rejects.toMatchObject({ retryable: true, message: expect.stringContaining('Redis is not connected') });
    expect(sent).toHaveLength(0);
  });
});

describe('RedisStreamSink writes of more than one send', () => {
  const many = (count: number) => Array.from({ length: count }, (_, n) => ({ ...log({ n }), id: `dw-${n}` }));
  const ok = (commands: string[][]) => commands.map((): [null, string] => [null, '1-0']);

  it(`sends a large batch ${ENTRIES_PER_SEND} entries at a time, in order, the next one a turn of the event loop later; every entry confirmed once`, async () => {
    const { client, sent } = fakeRedis(ok);
    const sink = new RedisStreamSink({ client });
    await sink.attach(attachContext);
    const batch = many(2 * ENTRIES_PER_SEND + 50);
    const written = sink.write(batch, { signal: signal(), attempt: 1 });
    expect(sent).toHaveLength(1); // the rest waits for the requests that arrived meanwhile
    await expect(written).resolves.toBeUndefined();
    expect(sent.map((send) => send.length)).toEqual([ENTRIES_PER_SEND, ENTRIES_PER_SEND, 50]);
    const ids = sent.flat().map((args) => args.flat()[args.flat().indexOf('id') + 1]);
    expect(ids).toEqual(batch.map((item) => item.id));
  });

  it('a Cluster client: each node group cut into pipelines, the groups taking turns, every outcome at its batch index', async () => {
    const { client, sent } = fakeRedis((commands) => commands.map((args) => (args[0] === '{b}' && commands.length === 10 ? [new Error('TRYAGAIN rehashing'), undefined] : [null, '1-0'])));
    const slots: string[][] = [];
    const { Command } = await import('ioredis');
    const slotOf = (key: string) => new Command('xadd', [key]).getSlot();
    slots[slotOf('{a}')] = ['n1:1'];
    slots[slotOf('{b}')] = ['n2:1'];
    const sink = new RedisStreamSink({ client: Object.assign(client, { isCluster: true, slots }), stream: (item) => `${(item as LogItem).fields?.s}` });
    await sink.attach(attachContext);
    // 120 entries for {a} (3 pipelines) and 10 for {b} (1), interleaved in the batch: {b} at every 13th index
    const batch = Array.from({ length: 130 }, (_, n) => ({ ...log({ s: n % 13 === 12 ? '{b}' : '{a}' }), id: `dw-${n}` }));
    const result = await sink.write(batch, { signal: signal(), attempt: 1 });
    expect(sent.map((pipeline) => [pipeline[0][0], pipeline.length])).toEqual([
      ['{a}', ENTRIES_PER_SEND],
      ['{b}', 10],
      ['{a}', ENTRIES_PER_SEND],
      ['{a}', 120 - 2 * ENTRIES_PER_SEND],
    ]);
    expect(result?.failed?.map((f) => f.index)).toEqual(batch.map((_, n) => n).filter((n) => n % 13 === 12));
  });

  it('a connection lost after the first send: the entries not yet sent stay unsent (no offline-queue copies), their entries retried', async () => {
    const { client, sent } = fakeRedis((commands) => {
      client.status = 'reconnecting';
      return ok(commands);
    });
    const sink = new RedisStreamSink({ client });
    await sink.attach(attachContext);
    const result = await sink.write(many(ENTRIES_PER_SEND + 30), { signal: signal(), attempt: 1 });
    expect(sent).toHaveLength(1);
    expect(result?.failed?.map((f) => f.index)).toEqual(Array.from({ length: 30 }, (_, k) => ENTRIES_PER_SEND + k));
    expect(result?.failed?.every((f) => f.retryable === true && String(f.error).includes('Redis is not connected'))).toBe(true);
  });

  it('a write cut short by its signal: the first send\'s entries confirmed, nothing sent after the abort, the rest retried', async () => {
    const controller = new AbortController();
    const { client, sent } = fakeRedis((commands) => {
      // after these replies are read, before the next send's turn
      setImmediate(() => controller.abort(new Error('write timed out')));
      return ok(commands);
    });
    const sink = new RedisStreamSink({ client });
    await sink.attach(attachContext);
    const result = await sink.write(many(3 * ENTRIES_PER_SEND), { signal: controller.signal, attempt: 1 });
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1);
    expect(result?.failed).toHaveLength(2 * ENTRIES_PER_SEND);
    expect(result?.failed?.[0]).toMatchObject({ index: ENTRIES_PER_SEND, retryable: true });
  });
});

describe('docs/sinks/redis-streams.md', () => {
  it('its options table lists every option with the default the code has', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../../../../docs/sinks/redis-streams.md'), 'utf8');
    const rows = new Map<string, string>();
    const section = doc.slice(doc.indexOf('## Options'), doc.indexOf('\n## ', doc.indexOf('## Options') + 3));
    for (const match of section.matchAll(/^\| `(\w+)` \| ([^|]+) \|/gm)) rows.set(match[1], match[2].trim());
    expect(Object.fromEntries(rows)).toEqual({
      name: `\`'${REDIS_STREAM_SINK_DEFAULTS.name}'\``,
      client: `\`'${REDIS_STREAM_SINK_DEFAULTS.client}'\``,
      kinds: "`['job', 'log', 'metric']`",
      stream: '`deferred:<kind>`',
      fields: 'the fields above',
      maxLen: 'no trimming',
      maxAgeMs: 'no trimming',
      noMkStream: `\`${REDIS_STREAM_SINK_DEFAULTS.noMkStream}\``,
    });
    expect(doc).toContain(`\`maxBatchSize\` ${REDIS_STREAM_PROCESSOR_DEFAULTS.maxBatchSize}`);
    expect(doc).toContain(`\`writeTimeoutMs\` ${REDIS_STREAM_PROCESSOR_DEFAULTS.writeTimeoutMs}`);
  });
});
