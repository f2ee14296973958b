import { Controller, Get, Param } from '@nestjs/common';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  type DeferredWorkModuleOptions,
  DeferredWorkModule,
  type DeferredStats,
  HttpSink,
  type HttpSinkOptions,
} from 'nestjs-deferred-work';
import { deadUrl, HttpReceiver, replyInOrder } from '../support/http-receiver';
import { failOnUnhandledRejection, platforms, type Platform, startApp, type StartedApp } from '../support/platforms';

/**
 * The HTTP sink end to end: a Nest app (Express and Fastify) defers items from an
 * `@AfterResponse()` route, the dispatcher batches them into an `HttpSink`, and a real HTTP server
 * on 127.0.0.1 receives them while answering 503, 429, 400, hanging or resetting connections.
 */

const SECRET = 'Bearer integration-s3cret';

@Controller()
class EventsController {
  /** One job, one log and one metric per request, each carrying the request's id. */
  @Get('event/:id')
  @AfterResponse()
  event(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'welcome', { id: Number(id) });
    work.log('info', 'event', { id: Number(id) });
    work.metric('events', Number(id));
    return { id };
  }

  /** One log per request. */
  @Get('log/:id')
  @AfterResponse()
  log(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.log('info', 'event', { id: Number(id) });
    return { id };
  }
}

/** Fast dispatcher settings so each fault plays out in milliseconds. */
const FAST: DeferredWorkModuleOptions = {
  flushIntervalMs: 2,
  maxBatchSize: 50,
  initialBackoffMs: 10,
  maxBackoffMs: 50,
  writeTimeoutMs: 1000,
  maxAttempts: 10,
  shutdownTimeoutMs: 3000,
};

/** Sends `count` GETs, `concurrency` at a time; returns the statuses in order. */
async function load(base: string, path: (i: number) => string, count: number, concurrency = 20): Promise<number[]> {
  const statuses: number[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        const res = await fetch(base + path(i));
        await res.arrayBuffer();
        statuses[i] = res.status;
      }
    }),
  );
  return statuses;
}

function expectIdentity(stats: DeferredStats): void {
  expect(stats.accepted).toBe(stats.delivered + stats.pending + stats.dropped + stats.deadLettered);
  const http = stats.sinks.http;
  expect(http.accepted).toBe(http.delivered + http.pending + http.dropped + http.deadLettered);
}

/** The `id` carried by a received item, whatever its kind. */
function idOf(item: unknown): number {
  const i = item as { kind: string; data?: { id: number }; fields?: { id: number }; value?: number };
  return i.kind === 'job' ? i.data!.id : i.kind === 'log' ? i.fields!.id : i.value!;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

/** Polls `predicate` (on a short timer) until true, or fails saying what it waited for. */
async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

failOnUnhandledRejection();

describe.each(platforms)('HttpSink integration on $name', (platform: Platform) => {
  let receiver: HttpReceiver;
  let started: StartedApp | undefined;
  let work: DeferredWork;

  async function setup(sink: HttpSinkOptions, options: DeferredWorkModuleOptions = {}): Promise<StartedApp> {
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ ...FAST, ...options, sinks: [new HttpSink(sink)] })],
      controllers: [EventsController],
    });
    work = started.app.get(DeferredWork);
    return started;
  }

  /** Closes the app (drains through the sink) and forgets it, so afterEach does not close it twice. */
  async function closeApp(): Promise<void> {
    const app = started;
    started = undefined;
    await app?.close();
  }

  beforeEach(async () => {
    receiver = await HttpReceiver.start();
  });
  afterEach(async () => {
    await closeApp();
    await receiver.close();
  });

  it('200 requests → exactly 200 items of each kind, each at its own URL', async () => {
    const { url } = await setup({
      url: receiver.url('/jobs'),
      urls: { log: receiver.url('/logs'), metric: receiver.url('/metrics') },
      headers: { authorization: SECRET },
    });
    const statuses = await load(url, (i) => `/event/${i}`, 200);
    expect(statuses.every((s) => s === 200)).toBe(true);
    await receiver.waitForDelivered(600);
    await expect(work.flush()).resolves.toBe(true);

    for (const [path, kind] of [
      ['/jobs', 'job'],
      ['/logs', 'log'],
      ['/metrics', 'metric'],
    ] as const) {
      const items = receiver.delivered(path);
      expect(items.every((item) => (item as { kind: string }).kind === kind)).toBe(true);
      expect(sorted(items.map(idOf))).toEqual(range(200));
    }
    expect(receiver.requests.every((r) => r.headers.authorization === SECRET)).toBe(true);
    const stats = work.stats();
    expectIdentity(stats);
    expect(stats).toMatchObject({ accepted: 600, delivered: 600, pending: 0, dropped: 0, deadLettered: 0, retried: 0 });
  });

  it('NDJSON with gzip: every item arrives once, compressed', async () => {
    const { url } = await setup({ url: receiver.url('/nd'), format: 'ndjson', gzip: { minBytes: 0 } });
    await load(url, (i) => `/log/${i}`, 50);
    await receiver.waitForDelivered(50);
    expect(sorted(receiver.delivered().map(idOf))).toEqual(range(50));
    expect(receiver.requests.every((r) => r.headers['content-encoding'] === 'gzip')).toBe(true);
    expect(receiver.requests.every((r) => r.headers['content-type'] === 'application/x-ndjson')).toBe(true);
    expectIdentity(work.stats());
  });

  it('503 a few times, then 200 → all delivered once, with retries', async () => {
    receiver.responder = replyInOrder({ status: 503 }, { status: 503 }, { status: 503 });
    const { url } = await setup({ url: receiver.url('/logs') });
    const statuses = await load(url, (i) => `/log/${i}`, 30);
    expect(statuses.every((s) => s === 200)).toBe(true);
    await receiver.waitForDelivered(30);
    await expect(work.flush()).resolves.toBe(true);

    expect(receiver.requests.filter((r) => (r.reply as { status: number }).status === 503)).toHaveLength(3);
    expect(sorted(receiver.delivered().map(idOf))).toEqual(range(30)); // no duplicates: a 503 delivered nothing
    const stats = work.stats();
    expect(stats.retried).toBeGreaterThan(0);
    expect(stats).toMatchObject({ accepted: 30, delivered: 30, pending: 0, dropped: 0, deadLettered: 0 });
    expectIdentity(stats);
  });

  it('only the failing URL is retried: logs arrive once while metrics get 503 first', async () => {
    receiver.responder = (request, seqOnPath) =>
      request.path === '/metrics' && seqOnPath < 2 ? { status: 503 } : { status: 200 };
    const { url } = await setup({ url: receiver.url('/jobs'), urls: { log: receiver.url('/logs'), metric: receiver.url('/metrics') } });
    await load(url, (i) => `/event/${i}`, 20);
    await receiver.waitForDelivered(60);
    await expect(work.flush()).resolves.toBe(true);

    expect(sorted(receiver.requestsTo('/logs').flatMap((r) => r.items).map(idOf))).toEqual(range(20));
    expect(sorted(receiver.requestsTo('/jobs').flatMap((r) => r.items).map(idOf))).toEqual(range(20));
    expect(sorted(receiver.delivered('/metrics').map(idOf))).toEqual(range(20));
    const stats = work.stats();
    expect(stats.retried).toBeGreaterThan(0);
    expect(stats).toMatchObject({ accepted: 60, delivered: 60, deadLettered: 0 });
    expectIdentity(stats);
  });

  it('429 with Retry-After: 1 → the next try waits for it', async () => {
    receiver.responder = replyInOrder({ status: 429, headers: { 'retry-after': '1' } });
    const { url } = await setup({ url: receiver.url('/logs') });
    await load(url, (i) => `/log/${i}`, 1);
    await receiver.waitForDelivered(1, undefined, 10_000);
    await expect(work.flush()).resolves.toBe(true);

    const [first, second] = receiver.requests;
    expect((first.reply as { status: number }).status).toBe(429);
    expect((second.reply as { status: number }).status).toBe(200);
    // Without Retry-After the backoff here is at most maxBackoffMs (50 ms).
    expect(second.at - first.at).toBeGreaterThanOrEqual(900);
    expect(receiver.requests).toHaveLength(2);
    expect(work.stats()).toMatchObject({ accepted: 1, delivered: 1, retried: 1 });
  });

  it('a hanging receiver → each write times out, is retried, then dead-lettered; nothing leaks', async () => {
    receiver.responder = () => 'hang';
    const { url } = await setup({ url: receiver.url('/logs') }, { writeTimeoutMs: 100, maxAttempts: 3 });
    const statuses = await load(url, (i) => `/log/${i}`, 10, 5);
    expect(statuses.every((s) => s === 200)).toBe(true);
    await until(() => work.stats().deadLettered === 10, '10 dead letters');

    const stats = work.stats();
    expect(stats).toMatchObject({ accepted: 10, delivered: 0, pending: 0, dropped: 0, deadLettered: 10 });
    expect(stats.retried).toBe(20); // 10 items × 2 retries
    expectIdentity(stats);
    expect(stats.sinks.http.lastError).toMatch(/timed out/);
    const letters = work.deadLetters();
    expect(letters).toHaveLength(10);
    expect(letters.every((l) => l.reason === 'attempts-exhausted' && l.attempts === 3)).toBe(true);
    // Each item was sent exactly maxAttempts times, and every timed-out request was torn down.
    const seen = receiver.requests.flatMap((r) => r.items).map(idOf);
    expect(sorted(seen)).toEqual(range(10).flatMap((i) => [i, i, i]));
    await receiver.waitUntil(() => receiver.openConnections === 0, 'every timed-out connection to close');
  });

  it('connection resets → retried, then delivered', async () => {
    receiver.responder = replyInOrder('reset', 'reset');
    const { url } = await setup({ url: receiver.url('/logs') });
    const statuses = await load(url, (i) => `/log/${i}`, 20);
    expect(statuses.every((s) => s === 200)).toBe(true);
    await receiver.waitForDelivered(20);
    await expect(work.flush()).resolves.toBe(true);

    expect(receiver.requests.filter((r) => r.reply === 'reset')).toHaveLength(2);
    expect(sorted(receiver.delivered().map(idOf))).toEqual(range(20));
    const stats = work.stats();
    expect(stats.retried).toBeGreaterThan(0);
    expect(stats).toMatchObject({ accepted: 20, delivered: 20, deadLettered: 0 });
    expectIdentity(stats);
  });

  it('400 → not retried, dead-lettered once, and the secret header is in no error', async () => {
    receiver.responder = () => ({ status: 400, body: 'bad request' });
    const { url } = await setup({ url: receiver.url('/logs'), headers: { authorization: SECRET } });
    await load(url, (i) => `/log/${i}`, 1);
    await until(() => work.stats().deadLettered === 1, 'the dead letter');

    expect(receiver.requests).toHaveLength(1);
    const stats = work.stats();
    expect(stats).toMatchObject({ accepted: 1, delivered: 0, deadLettered: 1, retried: 0 });
    expectIdentity(stats);
    const letters = work.deadLetters();
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ reason: 'not-retryable', attempts: 1, sink: 'http' });
    expect(letters[0].error).toMatch(/answered 400/);
    expect(`${letters[0].error} ${stats.sinks.http.lastError}`).not.toContain('s3cret');
  });

  it('shutdown under load with a healthy receiver loses nothing', async () => {
    receiver.responder = () => ({ status: 200, delayMs: 60 });
    // 300 items in batches of 10 at 60 ms per POST: about 1.8 s to drain, far longer than the load takes.
    const { url } = await setup({ url: receiver.url('/logs') }, { maxBatchSize: 10, shutdownTimeoutMs: 10_000 });
    const statuses = await load(url, (i) => `/log/${i}`, 300, 30);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(work.stats().pending).toBeGreaterThan(0); // the receiver is slower than the load

    await closeApp();
    const stats = work.stats();
    expect(stats).toMatchObject({ accepted: 300, delivered: 300, pending: 0, dropped: 0, deadLettered: 0 });
    expectIdentity(stats);
    expect(sorted(receiver.delivered().map(idOf))).toEqual(range(300));
    await expect(work.shutdown()).resolves.toEqual({ drained: true, undelivered: {} });
  });

  it('shutdown with a dead receiver ends by shutdownTimeoutMs and reports the undelivered count', async () => {
    const shutdownTimeoutMs = 500;
    const { url } = await setup(
      { url: await deadUrl('/logs') },
      { shutdownTimeoutMs, writeTimeoutMs: 200, maxAttempts: 1000, initialBackoffMs: 20, maxBackoffMs: 50 },
    );
    const statuses = await load(url, (i) => `/log/${i}`, 40);
    expect(statuses.every((s) => s === 200)).toBe(true); // a dead sink never touches a response
    await until(() => work.stats().accepted === 40, '40 accepted items');

    const closing = performance.now();
    await closeApp();
    const elapsed = performance.now() - closing;
    expect(elapsed).toBeLessThan(shutdownTimeoutMs + 2000);

    const report = await work.shutdown(); // idempotent: the report of the shutdown that ran
    expect(report.drained).toBe(false);
    expect(report.undelivered.http).toBe(40);
    const stats = work.stats();
    expect(stats).toMatchObject({ accepted: 40, delivered: 0, pending: 0, dropped: 0, deadLettered: 40 });
    expectIdentity(stats);
    // the last write may be the one the deadline cut short (on a busy machine); the writes before it met the refused connection
    expect(stats.sinks.http.lastError).toMatch(/ECONNREFUSED|shutdown deadline reached/);
    const letters = work.deadLetters();
    expect(letters).toHaveLength(40);
    // The write in flight at the deadline (its items may have been delivered) is told apart from the rest.
    expect(letters.filter((l) => l.reason !== 'shutdown' && l.reason !== 'shutdown-in-flight')).toEqual([]);
    expect(letters.filter((l) => l.reason === 'shutdown-in-flight').length).toBe(report.inFlight?.http ?? 0);
    const refused = letters.filter((l) => /ECONNREFUSED/.test(`${l.firstError?.message ?? ''} ${l.error ?? ''}`));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((l) => l.attempts > 0)).toBe(true);
  });
});
