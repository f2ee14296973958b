import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { deadUrl, HttpReceiver, replyInOrder } from '../../../../../test/support/http-receiver';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkWriteResult } from '../../core/sink.interface';
import type { HttpSinkGzipOptions, HttpSinkOptions } from './http-sink.options';
import { BODY_AFTER_SUCCESS_MS, HTTP_SINK_DEFAULTS, HttpSink, parseRetryAfter } from './http.sink';
import { idempotencyKey, toWire } from './http-wire';

const SECRET = 'Bearer s3cr3t-t0ken';

const job = (id: number): SinkItem => ({ kind: 'job', queue: 'mail', name: 'send', data: { id }, when: 'success', createdAt: 1 });
const log = (id: number): SinkItem => ({ kind: 'log', level: 'info', message: `m${id}`, fields: { id }, when: 'always', createdAt: 2 });
const metric = (id: number): SinkItem => ({ kind: 'metric', name: 'hits', value: id, tags: { id: String(id) }, when: 'always', createdAt: 3 });

const ctx = (signal = new AbortController().signal) => ({ signal, attempt: 1 });

async function writeError(sink: HttpSink, batch: SinkItem[], signal?: AbortSignal): Promise<SinkWriteError> {
  try {
    await sink.write(batch, ctx(signal));
  } catch (error) {
    expect(error).toBeInstanceOf(SinkWriteError);
    return error as SinkWriteError;
  }
  throw new Error('write resolved; a SinkWriteError was expected');
}

describe('toWire', () => {
  it("sends an item's correlation (request and trace ids) with it, and nothing when it has none", () => {
    const correlation = { requestId: 'req-1', traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) };
    const log = { kind: 'log' as const, level: 'info' as const, message: 'm', when: 'always' as const, createdAt: 1 };
    expect(JSON.parse(JSON.stringify(toWire({ ...log, correlation })))).toEqual({ kind: 'log', level: 'info', message: 'm', createdAt: 1, correlation });
    expect(JSON.stringify(toWire(log))).not.toContain('correlation');
  });
});

describe('stable ids (spooled items)', () => {
  const log = (id?: string): SinkItem => ({ kind: 'log', level: 'info', message: 'm', when: 'always', createdAt: 1, ...(id ? { id } : {}) });

  it("puts an item's id on the wire, and nothing when it has none", () => {
    expect(JSON.parse(JSON.stringify(toWire(log('dw-1'))))).toMatchObject({ id: 'dw-1' });
    expect(JSON.stringify(toWire(log()))).not.toContain('"id"');
  });

  it('derives one Idempotency-Key per POST from its scope and its items\' ids: the same items give the same key, other items or another scope another, no key when one has no id', () => {
    const batch = [log('dw-1'), log('dw-2'), log('dw-3'), log()];
    const key = idempotencyKey(batch, [0, 1], 'http\nhttp://a/x');
    expect(key).toMatch(/^dw-[\w-]{32}$/);
    expect(idempotencyKey([log('x'), log('dw-1'), log('dw-2')], [1, 2], 'http\nhttp://a/x')).toBe(key);
    expect(idempotencyKey(batch, [0, 2], 'http\nhttp://a/x')).not.toBe(key);
    expect(idempotencyKey(batch, [0, 1], 'audit\nhttp://a/x')).not.toBe(key);
    expect(idempotencyKey(batch, [0, 1], 'http\nhttp://a/y')).not.toBe(key);
    expect(idempotencyKey(batch, [0, 3], 'http\nhttp://a/x')).toBeUndefined();
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(['3', '9'], now)).toBe(3000);
  });

  it('reads an HTTP-date relative to now, and a past date as 0', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
  });

  it('ignores what is neither form', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

describe('HttpSink options', () => {
  const url = 'http://127.0.0.1:9/items';

  it('needs a URL for every kind', () => {
    expect(() => new HttpSink({})).toThrow(/no URL for kind "job"\. Pass "url" .* or "urls\.job"/);
    expect(() => new HttpSink({ urls: { log: url, metric: url } })).toThrow(/no URL for kind "job"/);
    expect(new HttpSink({ urls: { job: url, log: url, metric: url } }).name).toBe('http');
  });

  it('refuses bad URLs and says what to pass', () => {
    expect(() => new HttpSink({ url: 'not a url' })).toThrow(/option "url" is not an absolute URL \(got "not a url"\)\. Pass one such as/);
    expect(() => new HttpSink({ url: 'ftp://host/x' })).toThrow(/option "url" must use http: or https:, got "ftp:"/);
    expect(() => new HttpSink({ url, urls: { log: '/relative' } })).toThrow(/option "urls\.log" is not an absolute URL/);
    expect(() => new HttpSink({ url, urls: { callback: url } as never })).toThrow(/"urls\.callback": "callback" is not a kind of item/);
    expect(() => new HttpSink({ url: 42 as never })).toThrow(/not an absolute URL \(got 42\)/);
  });

  it('never shows URL credentials or query strings in errors', () => {
    let message = '';
    try {
      new HttpSink({ url: 'ftp://user:hunter2@host/path?token=abc' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/ftp:\/\/host\/path/);
    expect(message).not.toMatch(/hunter2|token=abc/);
  });

  it('checks gzip: level 1..9, minBytes >= 0', () => {
    expect(() => new HttpSink({ url, gzip: { level: 0 } })).toThrow(/"gzip\.level" must be a whole number from 1 to 9 \(1 fastest, 9 smallest\), got 0\. Leave it out for 6/);
    expect(() => new HttpSink({ url, gzip: { level: 10 } })).toThrow(/"gzip\.level"/);
    expect(() => new HttpSink({ url, gzip: { level: 2.5 } })).toThrow(/"gzip\.level"/);
    expect(() => new HttpSink({ url, gzip: { minBytes: -1 } })).toThrow(/"gzip\.minBytes" must be a whole number >= 0/);
    expect(() => new HttpSink({ url, gzip: 'yes' as never })).toThrow(/option "gzip" must be true, false or \{ level, minBytes \}/);
    expect(() => new HttpSink({ url, gzip: { level: 1, minBytes: 0 } })).not.toThrow();
  });

  it('checks format, name and headers without ever echoing a header value', () => {
    expect(() => new HttpSink({ url, format: 'xml' as never })).toThrow(/"format" must be one of 'json', 'ndjson', got "xml"/);
    expect(() => new HttpSink({ url, name: '' })).toThrow(/"name" must be a non-empty string/);
    expect(() => new HttpSink({ url, headers: { 'Content-Length': '5' } })).toThrow(/header "content-length" is set by the sink itself/);
    expect(() => new HttpSink({ url, headers: { 'bad name': 'x' } })).toThrow(/header name "bad name" is not a valid HTTP header name/);
    expect(() => new HttpSink({ url, headers: { Authorization: 'a', authorization: 'b' } })).toThrow(/header "authorization" is given twice/);
    const messages: string[] = [];
    for (const headers of [{ authorization: `${SECRET}\r\nx: y` }, { authorization: 123 as never }]) {
      try {
        new HttpSink({ url, headers });
      } catch (error) {
        messages.push((error as Error).message);
      }
    }
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatch(/header "authorization" has an invalid value/);
    expect(messages[1]).toMatch(/header "authorization" must have a string value \(got number\)/);
    for (const message of messages) expect(message).not.toMatch(/s3cr3t|123/);
  });
});

describe('HttpSink against a real local receiver', () => {
  let receiver: HttpReceiver;
  let sink: HttpSink | undefined;

  beforeEach(async () => {
    receiver = await HttpReceiver.start();
  });
  afterEach(async () => {
    sink?.shutdown();
    sink = undefined;
    await receiver.close();
  });

  it('POSTs a batch as {"items":[...]} JSON with the configured headers and only wire fields', async () => {
    sink = new HttpSink({ url: receiver.url('/items?api_key=k'), headers: { Authorization: SECRET } });
    const batch = [job(1), log(2), metric(3)];
    await expect(sink.write(batch, ctx())).resolves.toBeUndefined();
    expect(receiver.requests).toHaveLength(1);
    const [request] = receiver.requests;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/items?api_key=k');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers.authorization).toBe(SECRET);
    expect(request.headers['content-encoding']).toBeUndefined();
    expect(request.headers['user-agent']).toBe('nestjs-deferred-work');
    expect(JSON.parse(request.text)).toEqual({
      items: [
        { kind: 'job', queue: 'mail', name: 'send', data: { id: 1 }, createdAt: 1 },
        { kind: 'log', level: 'info', message: 'm2', fields: { id: 2 }, createdAt: 2 },
        { kind: 'metric', name: 'hits', value: 3, tags: { id: '3' }, createdAt: 3 },
      ],
    });
  });

  it('a 2xx is delivered when its status arrives: a write cut short while the body is still coming does not fail its items', async () => {
    receiver.responder = () => ({ status: 200, bodyDelayMs: 3000 });
    sink = new HttpSink({ url: receiver.url('/items') });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('write timed out')), 1000);
    await expect(sink.write([job(1)], { signal: controller.signal, attempt: 1 })).resolves.toBeUndefined();
  });

  it(`a 2xx whose body never ends: delivered at its status, and its socket freed ${BODY_AFTER_SUCCESS_MS} ms later`, async () => {
    receiver.responder = () => ({ status: 200, bodyDelayMs: 120_000 });
    sink = new HttpSink({ url: receiver.url('/items') });
    await expect(sink.write([job(1)], ctx())).resolves.toBeUndefined();
    expect(receiver.openConnections).toBe(1);
    await receiver.waitUntil(() => receiver.openConnections === 0, 'the connection closed', BODY_AFTER_SUCCESS_MS + 3000);
  }, BODY_AFTER_SUCCESS_MS + 10_000);

  it('drops functions from payloads (they never go over the wire)', async () => {
    sink = new HttpSink({ url: receiver.url('/items') });
    const item: SinkItem = { kind: 'job', queue: 'q', name: 'n', data: { id: 1, fn: () => 1 }, when: 'success', createdAt: 0 };
    await sink.write([item], ctx());
    expect(receiver.delivered()).toEqual([{ kind: 'job', queue: 'q', name: 'n', data: { id: 1 }, createdAt: 0 }]);
  });

  it('sends NDJSON when asked: one item per line, newline-terminated', async () => {
    sink = new HttpSink({ url: receiver.url('/nd'), format: 'ndjson' });
    await sink.write([log(1), log(2)], ctx());
    const [request] = receiver.requests;
    expect(request.headers['content-type']).toBe('application/x-ndjson');
    expect(request.text.split('\n')).toHaveLength(3);
    expect(request.text.endsWith('\n')).toBe(true);
    expect(receiver.delivered()).toEqual([expect.objectContaining({ message: 'm1' }), expect.objectContaining({ message: 'm2' })]);
  });

  it('gzips bodies at or above gzip.minBytes only, and not at all by default', async () => {
    sink = new HttpSink({ url: receiver.url('/z'), gzip: { minBytes: 200 } });
    const big = Array.from({ length: 20 }, (_, i) => log(i));
    await sink.write(big, ctx());
    await sink.write([log(1)], ctx());
    const [compressed, small] = receiver.requests;
    expect(compressed.headers['content-encoding']).toBe('gzip');
    expect(Number(compressed.headers['content-length'])).toBe(compressed.raw.length);
    expect(JSON.parse(gunzipSync(compressed.raw).toString()).items).toHaveLength(20);
    expect(compressed.raw.length).toBeLessThan(Buffer.byteLength(gunzipSync(compressed.raw)));
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(receiver.delivered()).toHaveLength(21);

    sink.shutdown();
    sink = new HttpSink({ url: receiver.url('/plain') });
    await sink.write(big, ctx());
    expect(receiver.requestsTo('/plain')[0].headers['content-encoding']).toBeUndefined();
  });

  it('routes kinds to their URLs: one POST per distinct URL per batch', async () => {
    sink = new HttpSink({ url: receiver.url('/default'), urls: { log: receiver.url('/logs'), metric: receiver.url('/metrics') } });
    await sink.write([log(1), metric(1), job(1), log(2), metric(2), job(2)], ctx());
    expect(receiver.requests).toHaveLength(3);
    expect(receiver.delivered('/logs')).toEqual([expect.objectContaining({ message: 'm1' }), expect.objectContaining({ message: 'm2' })]);
    expect(receiver.delivered('/metrics')).toEqual([expect.objectContaining({ value: 1 }), expect.objectContaining({ value: 2 })]);
    expect(receiver.delivered('/default')).toEqual([expect.objectContaining({ data: { id: 1 } }), expect.objectContaining({ data: { id: 2 } })]);
  });

  it('kinds sharing a URL share one POST', async () => {
    sink = new HttpSink({ url: receiver.url('/all'), urls: { log: receiver.url('/all') } });
    await sink.write([log(1), metric(1), job(1)], ctx());
    expect(receiver.requests).toHaveLength(1);
  });

  it('reports a partial failure with the failed indexes when only some URLs fail', async () => {
    receiver.responder = (request) =>
      request.path === '/metrics' ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 };
    sink = new HttpSink({ url: receiver.url('/logs'), urls: { metric: receiver.url('/metrics') } });
    const result = (await sink.write([log(0), metric(1), log(2), metric(3)], ctx())) as SinkWriteResult;
    expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([
      [1, true],
      [3, true],
    ]);
    // each failed item carries the wait the server asked for (on its SinkWriteError); the processor waits the longest
    expect(result.failed?.map((f) => (f.error as SinkWriteError).retryAfterMs)).toEqual([2000, 2000]);
    expect(receiver.delivered('/logs')).toHaveLength(2);
  });

  it('marks each failed item retryable or not by its URL\'s answer', async () => {
    receiver.responder = (request) => ({ status: request.path === '/metrics' ? 400 : 503 });
    sink = new HttpSink({ url: receiver.url('/logs'), urls: { metric: receiver.url('/metrics') } });
    const result = (await sink.write([log(0), metric(1)], ctx())) as SinkWriteResult;
    expect(result.failed?.map((f) => [f.index, f.retryable]).sort()).toEqual([
      [0, true],
      [1, false],
    ]);
  });

  it('throws one retryable error when every URL fails retryably', async () => {
    receiver.responder = (request) => ({ status: 503, headers: { 'retry-after': request.path === '/a' ? '1' : '3' } });
    sink = new HttpSink({ url: receiver.url('/a'), urls: { metric: receiver.url('/b') } });
    const error = await writeError(sink, [log(0), metric(1)]);
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(3000);
  });

  it.each([409, 429, 502, 503, 504])('%i is retryable and honours Retry-After (delta-seconds)', async (status) => {
    receiver.responder = () => ({ status, headers: { 'retry-after': '7' } });
    sink = new HttpSink({ url: receiver.url('/x') });
    const error = await writeError(sink, [log(1)]);
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(7000);
    expect(error.message).toMatch(new RegExp(`POST http://127\\.0\\.0\\.1:\\d+/x answered ${status}`));
  });

  it('honours Retry-After as an HTTP-date', async () => {
    receiver.responder = () => ({ status: 429, headers: { 'retry-after': new Date(Date.now() + 60_000).toUTCString() } });
    sink = new HttpSink({ url: receiver.url('/x') });
    const error = await writeError(sink, [log(1)]);
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBeGreaterThan(0);
  });

  it('a retryable status without Retry-After leaves the delay to the dispatcher', async () => {
    receiver.responder = () => ({ status: 503 });
    sink = new HttpSink({ url: receiver.url('/x') });
    const error = await writeError(sink, [log(1)]);
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBeUndefined();
  });

  it.each([400, 401, 404, 413, 500, 301])('%i is not retryable', async (status) => {
    receiver.responder = () => ({ status, headers: { 'retry-after': '1' } });
    sink = new HttpSink({ url: receiver.url('/x') });
    const error = await writeError(sink, [log(1)]);
    expect(error.retryable).toBe(false);
    expect(error.retryAfterMs).toBeUndefined();
    expect(receiver.requests).toHaveLength(1);
  });

  it('keeps headers, URL credentials and query strings out of error messages', async () => {
    receiver.responder = () => ({ status: 401 });
    sink = new HttpSink({ url: `http://user:hunter2@127.0.0.1:${receiver.port}/x?token=abc`, headers: { authorization: SECRET } });
    const error = await writeError(sink, [log(1)]);
    expect(error.message).toMatch(/answered 401 .*Check the credentials in "headers"/);
    expect(`${error.message} ${String(error.cause ?? '')}`).not.toMatch(/s3cr3t|hunter2|token=abc/);
    // An explicit authorization header wins over the URL's credentials.
    expect(receiver.requests[0].headers.authorization).toBe(SECRET);
  });

  it('a refused connection is retryable', async () => {
    sink = new HttpSink({ url: await deadUrl('/x') });
    const error = await writeError(sink, [log(1)]);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('a connection reset by the receiver is retryable', async () => {
    receiver.responder = () => 'reset';
    sink = new HttpSink({ url: receiver.url('/x') });
    const error = await writeError(sink, [log(1)]);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/socket hang up|ECONNRESET/);
  });

  it('aborting the signal ends the request, frees its connection and is retryable', async () => {
    receiver.responder = () => 'hang';
    sink = new HttpSink({ url: receiver.url('/hang') });
    const controller = new AbortController();
    const pending = writeError(sink, [log(1)], controller.signal);
    await receiver.waitUntil(() => receiver.requests.length === 1, 'the request');
    expect(receiver.openConnections).toBe(1);
    controller.abort(new Error('write timed out after 50 ms'));
    const error = await pending;
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/aborted: write timed out after 50 ms/);
    await receiver.waitUntil(() => receiver.openConnections === 0, 'the connection to close');
  });

  it('sends nothing when the signal is already aborted', async () => {
    sink = new HttpSink({ url: receiver.url('/x') });
    const controller = new AbortController();
    controller.abort(new Error('shutdown deadline reached'));
    const error = await writeError(sink, [log(1)], controller.signal);
    expect(error.retryable).toBe(true);
    expect(receiver.requests).toHaveLength(0);
  });

  it('an item that cannot be serialised fails alone, not retryable; the rest is delivered', async () => {
    sink = new HttpSink({ url: receiver.url('/x') });
    const bad: SinkItem = { kind: 'log', level: 'info', message: 'bad', fields: { n: 1n }, when: 'always', createdAt: 0 };
    const result = (await sink.write([log(0), bad, log(2)], ctx())) as SinkWriteResult;
    expect(result.failed).toEqual([{ index: 1, retryable: false, error: expect.any(SinkWriteError) }]);
    expect((result.failed![0].error as Error).message).toMatch(/cannot be serialised to JSON/);
    expect(receiver.delivered().map((i) => (i as { message: string }).message)).toEqual(['m0', 'm2']);
  });

  it('a callback item that reached it is refused, not retryable', async () => {
    sink = new HttpSink({ url: receiver.url('/x') });
    const callback = { kind: 'callback', fn: () => 1, when: 'always', createdAt: 0 } as unknown as SinkItem;
    const result = (await sink.write([callback, log(1)], ctx())) as SinkWriteResult;
    expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([[0, false]]);
    expect(receiver.delivered()).toHaveLength(1);
  });

  it('reuses one keep-alive connection across writes', async () => {
    sink = new HttpSink({ url: receiver.url('/x') });
    for (let i = 0; i < 5; i++) await sink.write([log(i)], ctx());
    expect(receiver.delivered()).toHaveLength(5);
    expect(receiver.connectionsOpened).toBe(1);
  });

  it('shutdown() destroys the agent: idle connections close and later writes fail, not retryable', async () => {
    sink = new HttpSink({ url: receiver.url('/x') });
    await sink.write([log(1)], ctx());
    expect(receiver.openConnections).toBe(1);
    sink.shutdown();
    sink.shutdown(); // idempotent
    await receiver.waitUntil(() => receiver.openConnections === 0, 'the idle connection to close');
    const error = await writeError(sink, [log(2)]);
    expect(error.retryable).toBe(false);
    expect(receiver.requests).toHaveLength(1);
  });

  describe('a POST refused because of its content (400, 413, 422) is split to isolate the refused items', () => {
    /** Log items with stable ids (`dw-<i>`), so that every POST carries an Idempotency-Key. */
    const batchOf = (n: number): SinkItem[] => Array.from({ length: n }, (_, i) => ({ ...log(i), id: `dw-${i}` }));
    const messageOf = (item: unknown) => (item as { message: string }).message;
    const indexOf = (item: unknown) => Number(messageOf(item).slice(1));
    /** Answers `status` to any POST that carries one of `bad` (by index), 200 otherwise. */
    const refusing = (bad: number[], status = 422) => (request: { items: unknown[] }) =>
      request.items.some((item) => bad.includes(indexOf(item))) ? { status, body: 'unprocessable entry' } : { status: 200 };
    const deliveredIndexes = () => receiver.delivered().map(indexOf).sort((a, b) => a - b);
    const range = (n: number, except: number[] = []) => Array.from({ length: n }, (_, i) => i).filter((i) => !except.includes(i));

    it('one bad item among 20: only it fails (not retryable, the status as its code); the 19 others are delivered once, in 9 POSTs', async () => {
      receiver.responder = refusing([7]);
      sink = new HttpSink({ url: receiver.url('/x') });
      const batch = batchOf(20);
      const result = (await sink.write(batch, ctx())) as SinkWriteResult;
      expect(result.failed).toEqual([{ index: 7, retryable: false, code: '422', error: expect.any(SinkWriteError) }]);
      const error = result.failed![0].error as SinkWriteError;
      expect(error).toMatchObject({ retryable: false, code: '422' });
      expect(error.message).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/x answered 422 Unprocessable Entity \(not retried\)\. The receiver refused this item alone\./);
      expect(deliveredIndexes()).toEqual(range(20, [7]));
      // 20 → 10 + 10 → 5 + 5 → 3 + 2 → 2 + 1 → 1 + 1: the refused halves are split, the accepted ones are not sent again
      expect(receiver.requests.map((r) => r.items.length)).toEqual([20, 10, 5, 5, 3, 2, 1, 2, 10]);
      expect(receiver.requests.filter((r) => r.items.some((item) => indexOf(item) === 7)).every((r) => r.reply !== 'hang' && (r.reply as { status: number }).status === 422)).toBe(true);
    });

    it('wherever the bad item is among 20, 9 to 11 POSTs (1 + 2 per halving) isolate it', async () => {
      sink = new HttpSink({ url: receiver.url('/x') });
      const posts: number[] = [];
      for (let bad = 0; bad < 20; bad++) {
        receiver.requests.length = 0;
        receiver.responder = refusing([bad], 400);
        const result = (await sink.write(batchOf(20), ctx())) as SinkWriteResult;
        expect(result.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([[bad, false, '400']]);
        expect(deliveredIndexes()).toEqual(range(20, [bad]));
        posts.push(receiver.requests.length);
      }
      expect(Math.min(...posts)).toBe(9);
      expect(Math.max(...posts)).toBe(11);
    });

    it('each POST carries the Idempotency-Key of its own items', async () => {
      receiver.responder = refusing([3]);
      sink = new HttpSink({ url: receiver.url('/x') });
      const batch = batchOf(8);
      await sink.write(batch, ctx());
      expect(receiver.requests.length).toBeGreaterThan(1);
      for (const request of receiver.requests) {
        expect(request.headers['idempotency-key']).toBe(idempotencyKey(batch, request.items.map(indexOf), `${sink.name}\n${receiver.url('/x')}`));
      }
      expect(new Set(receiver.requests.map((r) => r.headers['idempotency-key'])).size).toBe(receiver.requests.length);
    });

    it('two sinks posting the same items (an item routed to both) send different keys, each the same on a retry', async () => {
      receiver.responder = () => ({ status: 200 });
      const batch = batchOf(3);
      const logs = new HttpSink({ name: 'logs', url: receiver.url('/logs') });
      const archive = new HttpSink({ name: 'archive', url: receiver.url('/archive') });
      try {
        for (const s of [logs, archive, logs]) await s.write(batch, ctx());
        const keys = receiver.requests.map((r) => r.headers['idempotency-key']);
        expect(keys).toHaveLength(3);
        expect(keys[0]).not.toBe(keys[1]);
        expect(keys[2]).toBe(keys[0]);
      } finally {
        logs.shutdown();
        archive.shutdown();
      }
    });

    it('isolates several bad items (NDJSON too), and reports each with its own error', async () => {
      receiver.responder = refusing([0, 9, 10], 400);
      sink = new HttpSink({ url: receiver.url('/x'), format: 'ndjson' });
      const result = (await sink.write(batchOf(16), ctx())) as SinkWriteResult;
      expect(result.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([
        [0, false, '400'],
        [9, false, '400'],
        [10, false, '400'],
      ]);
      expect(deliveredIndexes()).toEqual(range(16, [0, 9, 10]));
      expect(receiver.requests.every((r) => r.headers['content-type'] === 'application/x-ndjson')).toBe(true);
    });

    it('a 413 for a POST of several items splits it until the halves fit: everything is delivered', async () => {
      receiver.responder = (request) => (request.items.length > 4 ? { status: 413 } : { status: 200 });
      sink = new HttpSink({ url: receiver.url('/x') });
      await expect(sink.write(batchOf(12), ctx())).resolves.toBeUndefined();
      expect(deliveredIndexes()).toEqual(range(12));
      expect(receiver.requests.map((r) => r.items.length)).toEqual([12, 6, 3, 3, 6, 3, 3]);
    });

    it('a 413 for a single item is that item’s fault: it fails alone, not retryable, with code 413', async () => {
      const batch = batchOf(6);
      batch[4] = { ...batch[4], fields: { blob: 'x'.repeat(10_000) } } as SinkItem;
      receiver.responder = (request) => (request.raw.length > 5000 ? { status: 413, body: 'too large' } : { status: 200 });
      sink = new HttpSink({ url: receiver.url('/x') });
      const result = (await sink.write(batch, ctx())) as SinkWriteResult;
      expect(result.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([[4, false, '413']]);
      expect((result.failed![0].error as Error).message).toMatch(/answered 413 Payload Too Large \(not retried\)\. This item alone is too large for the receiver/);
      expect(receiver.delivered()).toHaveLength(5);
    });

    it('a single-item batch refused with 400 throws as before: one POST, not retryable, code 400', async () => {
      receiver.responder = () => ({ status: 400 });
      sink = new HttpSink({ url: receiver.url('/x') });
      const error = await writeError(sink, batchOf(1));
      expect(error).toMatchObject({ retryable: false, code: '400' });
      expect(receiver.requests).toHaveLength(1);
    });

    it('a receiver that refuses every item: each fails alone, after 2n - 1 POSTs', async () => {
      receiver.responder = () => ({ status: 400 });
      sink = new HttpSink({ url: receiver.url('/x') });
      const result = (await sink.write(batchOf(4), ctx())) as SinkWriteResult;
      expect(result.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual(range(4).map((i) => [i, false, '400']));
      expect(receiver.requests.map((r) => r.items.length)).toEqual([4, 2, 1, 1, 2, 1, 1]);
    });

    it.each([
      ['503', { status: 503 }, true],
      ['429', { status: 429 }, true],
      ['500', { status: 500 }, false],
      ['401', { status: 401 }, false],
      ['404', { status: 404 }, false],
    ] as const)('a %s still fails the whole POST as it is: one POST, the status as its code', async (code, reply, retryable) => {
      receiver.responder = () => reply;
      sink = new HttpSink({ url: receiver.url('/x') });
      const error = await writeError(sink, batchOf(10));
      expect(error).toMatchObject({ retryable, code });
      expect(receiver.requests).toHaveLength(1);
    });

    it('a connection reset still fails the whole POST as it is, retryable: one POST', async () => {
      receiver.responder = () => 'reset';
      sink = new HttpSink({ url: receiver.url('/x') });
      const error = await writeError(sink, batchOf(10));
      expect(error.retryable).toBe(true);
      expect(receiver.requests).toHaveLength(1);
    });

    it('a retryable answer to a half fails that half only, retryable; the other half is delivered', async () => {
      // 8 items, bad 6: [0..7] 422, [0..3] 200, [4..7] 503
      receiver.responder = (request, seq) => (seq === 2 ? { status: 503 } : refusing([6])(request));
      sink = new HttpSink({ url: receiver.url('/x') });
      const result = (await sink.write(batchOf(8), ctx())) as SinkWriteResult;
      expect(result.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([4, 5, 6, 7].map((i) => [i, true, '503']));
      expect(deliveredIndexes()).toEqual([0, 1, 2, 3]);
      expect(receiver.requests).toHaveLength(3);
    });

    it('stops at the write’s signal: nothing is sent after it aborts, what was confirmed stays delivered, the rest fail retryable', async () => {
      const controller = new AbortController();
      // 8 items, bad 6: [0..7] 422, [0..3] 200, [4..7] 422, then the write times out during [4, 5]
      receiver.responder = (request, seq) => {
        if (seq === 3) {
          controller.abort(new Error('write timed out after 50 ms'));
          return 'hang';
        }
        return refusing([6])(request);
      };
      sink = new HttpSink({ url: receiver.url('/x') });
      const result = (await sink.write(batchOf(8), ctx(controller.signal))) as SinkWriteResult;
      expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([4, 5, 6, 7].map((i) => [i, true]));
      for (const failure of result.failed!) expect((failure.error as Error).message).toMatch(/aborted: write timed out after 50 ms/);
      expect(deliveredIndexes()).toEqual([0, 1, 2, 3]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(receiver.requests.map((r) => r.items.length)).toEqual([8, 4, 4, 2]);
      await receiver.waitUntil(() => receiver.openConnections <= 1, 'the aborted request’s connection to close');
    });

    it('isolates within each URL’s POST; the other URLs are sent once', async () => {
      receiver.responder = (request) => (request.path === '/logs' ? refusing([2])(request) : { status: 200 });
      sink = new HttpSink({ url: receiver.url('/logs'), urls: { metric: receiver.url('/metrics') } });
      const batch = [...batchOf(6), { ...metric(1), id: 'dw-m1' } as SinkItem, { ...metric(2), id: 'dw-m2' } as SinkItem];
      const result = (await sink.write(batch, ctx())) as SinkWriteResult;
      expect(result.failed?.map((f) => [f.index, f.retryable, f.code])).toEqual([[2, false, '422']]);
      expect(receiver.requestsTo('/metrics')).toHaveLength(1);
      expect(receiver.delivered('/metrics')).toHaveLength(2);
      expect(receiver.delivered('/logs').map(indexOf).sort()).toEqual([0, 1, 3, 4, 5]);
    });
  });

  it('replyInOrder answers each path in turn, then 200', async () => {
    receiver.responder = replyInOrder({ status: 503 }, 'reset');
    sink = new HttpSink({ url: receiver.url('/x') });
    expect((await writeError(sink, [log(1)])).retryable).toBe(true);
    expect((await writeError(sink, [log(1)])).retryable).toBe(true);
    await expect(sink.write([log(1)], ctx())).resolves.toBeUndefined();
    expect(receiver.delivered()).toHaveLength(1);
  });
});

describe('docs/sinks/http.md', () => {
  // Adding an option to HttpSinkOptions without listing it here fails the type check.
  const OPTIONS: Record<keyof HttpSinkOptions, true> = {
    name: true,
    url: true,
    urls: true,
    format: true,
    headers: true,
    gzip: true,
    agentOptions: true,
  };
  const GZIP_OPTIONS: Record<keyof HttpSinkGzipOptions, true> = { level: true, minBytes: true };

  it('lists every option with the default the code applies', () => {
    const page = readFileSync(join(import.meta.dirname, '../../../../../docs/sinks/http.md'), 'utf8');
    const start = page.indexOf('| option |');
    const table = page.slice(start, page.indexOf('\n\n', start));
    const rows = new Map(
      table
        .split('\n')
        .slice(2)
        .map((row) => row.split('|').map((cell) => cell.trim()))
        .map((cells) => [cells[1].replace(/`/g, ''), cells[2]] as const),
    );
    const expected = [...Object.keys(OPTIONS), ...Object.keys(GZIP_OPTIONS).map((k) => `gzip.${k}`)];
    expect([...rows.keys()].sort()).toEqual(expected.sort());
    expect(rows.get('name')).toBe(`\`'${HTTP_SINK_DEFAULTS.name}'\``);
    expect(rows.get('format')).toBe(`\`'${HTTP_SINK_DEFAULTS.format}'\``);
    expect(rows.get('gzip')).toBe('`false`');
    expect(rows.get('gzip.level')).toBe(`\`${HTTP_SINK_DEFAULTS.gzipLevel}\``);
    expect(rows.get('gzip.minBytes')).toBe(`\`${HTTP_SINK_DEFAULTS.gzipMinBytes}\``);
    const agent = HTTP_SINK_DEFAULTS.agentOptions;
    expect(rows.get('agentOptions')).toBe(
      `\`{ keepAlive: ${agent.keepAlive}, keepAliveMsecs: ${agent.keepAliveMsecs}, timeout: ${agent.timeout} }\``,
    );
  });
});
