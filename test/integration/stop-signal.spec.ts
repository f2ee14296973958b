import { Agent, request } from 'node:http';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { HttpReceiver } from '../support/http-receiver';
import { compileFixture, NodeApp } from '../support/node-app';
import { platforms, startApp, type StartedApp } from '../support/platforms';
import { requireBroker } from '../support/tcp-proxy';

/**
 * A stop signal without `app.enableShutdownHooks()` (the `drainOnSignal` option), as real processes
 * (test/fixtures/stop-signal.app.ts), on Express and Fastify: every request defers a BullMQ job to the
 * machine's Redis (127.0.0.1:6379, under a prefix private to each test, removed after it) and a log
 * record to an HTTP receiver in this process. Each request's mark is the job's id and the log's
 * `fields.mark`, so the test checks every 201 it got against what reached Redis and the receiver.
 */
const REDIS_PORT = 6379;
const QUEUE = 'orders';
const RUN = `dw-stop-${process.pid}-${Date.now().toString(36)}`;
const DRAIN_LINE = /(SIGTERM|SIGINT) received and no shutdown hooks are enabled: the HTTP server stops accepting connections, deferred work drains for up to (\d+) ms/;
let file: string;
let receiver: HttpReceiver;
let app: NodeApp | undefined;
let prefix = '';
let seq = 0;
/** An agent without keep-alive: a connection per request. */
const oneShot = new Agent({ keepAlive: false });
/** The figures of each run, printed at the end. */
const figures: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  await requireBroker('Redis', REDIS_PORT, 'start redis-server on 127.0.0.1:6379 (the tests use keys under a private prefix only).');
  file = compileFixture('stop-signal.app');
});
beforeEach(async () => {
  receiver = await HttpReceiver.start();
  prefix = `${RUN}-${++seq}`;
});
afterEach(async () => {
  app?.kill();
  app = undefined;
  await receiver?.close();
  await removeKeys(prefix);
});
afterAll(() => {
  if (figures.length > 0) console.log(`stop-signal figures:\n${figures.map((f) => JSON.stringify(f)).join('\n')}`);
});

/** Deletes every key under `prefix` (this test's queue), nothing else. */
async function removeKeys(under: string): Promise<void> {
  const redis = new Redis({ host: '127.0.0.1', port: REDIS_PORT, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${under}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** The ids of the jobs in this test's queue (nothing consumes them: all wait). */
async function jobIds(): Promise<Set<string>> {
  const queue = new Queue(QUEUE, { connection: { host: '127.0.0.1', port: REDIS_PORT }, prefix });
  try {
    const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized']);
    return new Set(jobs.map((job) => String(job.id)));
  } finally {
    await queue.close();
  }
}

/** The marks of the log records the receiver took (answered 2xx). */
function loggedMarks(): Set<string> {
  return new Set(receiver.delivered('/logs').map((item) => String((item as { fields?: { mark?: string } }).fields?.mark)));
}

/** Starts the fixture app on `platform`; resolves once it listens. */
async function start(platform: string, env: Record<string, string> = {}): Promise<{ app: NodeApp; url: string }> {
  app = new NodeApp(file, {
    PLATFORM: platform,
    REDIS_PORT: String(REDIS_PORT),
    PREFIX: prefix,
    QUEUE,
    RECEIVER_URL: receiver.url('/logs'),
    ...env,
  });
  const { port } = await app.json<{ port: number }>('port', 30_000);
  return { app, url: `http://127.0.0.1:${port}` };
}

/** POSTs to `url` through `agent`; resolves with the status once the response has ended. */
function post(url: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent }, (res) => {
      res.on('error', reject);
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.resume();
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Clients posting orders one after another each, over keep-alive connections (one agent), until their
 * first failure once `signalled` is set, or until `stop()`.
 */
class Clients {
  /** Marks of the requests answered 201. */
  readonly created: string[] = [];
  /** Failures before the signal (none expected). */
  readonly early: string[] = [];
  /** Answers other than 201. */
  readonly other: number[] = [];
  signalled = false;
  private stopped = false;
  private readonly agent: Agent;
  readonly done: Promise<void>;

  constructor(url: string, count: number) {
    this.agent = new Agent({ keepAlive: true, maxSockets: count });
    this.done = Promise.all(Array.from({ length: count }, (_, c) => this.client(url, c))).then(() => undefined);
  }

  /** Sends no more requests and closes the connections once the last answer is in. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
    this.agent.destroy();
  }

  private async client(url: string, c: number): Promise<void> {
    for (let n = 0; !this.stopped; n++) {
      const mark = `${prefix}-c${c}-${n}`;
      try {
        const status = await post(`${url}/order/${mark}`, this.agent);
        if (status === 201) this.created.push(mark);
        else this.other.push(status);
      } catch (error) {
        if (!this.signalled) this.early.push(String(error));
        return;
      }
    }
  }
}

async function until(predicate: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; app output:\n${app?.output}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every 201's job is in Redis and its log record reached the receiver. */
async function expectAllDelivered(created: readonly string[]): Promise<{ jobs: number; logs: number }> {
  const jobs = await jobIds();
  const logs = loggedMarks();
  expect(created.filter((mark) => !jobs.has(mark))).toEqual([]);
  expect(created.filter((mark) => !logs.has(mark))).toEqual([]);
  return { jobs: jobs.size, logs: logs.size };
}

describe.each(platforms)('a stop signal without enableShutdownHooks() ($name, a real process)', ({ name: platform }) => {
  it('SIGTERM mid-load: every item of every 201 is delivered, the drain is logged, the process ends by SIGTERM', async () => {
    const started = await start(platform, { SHUTDOWN_TIMEOUT_MS: '10000' });
    const clients = new Clients(started.url, 30);
    await until(() => clients.created.length >= 400, '400 responses');

    const signalledAt = Date.now();
    clients.signalled = true;
    started.app.signal('SIGTERM');
    const exit = await started.app.exited;
    const tookMs = Date.now() - signalledAt;
    await clients.stop(); // every client has met the closed server by now

    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    expect(clients.early).toEqual([]);
    expect(clients.other).toEqual([]);
    expect(started.app.output).toMatch(DRAIN_LINE);
    expect(started.app.output.match(new RegExp(DRAIN_LINE.source, 'g'))).toHaveLength(1);
    expect(started.app.output).toMatch(/drains for up to 10000 ms/);
    expect(started.app.output).not.toMatch(/undelivered|dead-lettered/);
    const delivered = await expectAllDelivered(clients.created);
    expect(tookMs).toBeLessThan(10_000);
    figures.push({ platform, case: 'SIGTERM mid-load', responses201: clients.created.length, ...delivered, exit: exit.signal, drainMs: tookMs });
  }, 60_000);

  it.each([
    ['SIGTERM', 'SIGINT'],
    ['SIGINT', 'SIGINT'],
  ] as const)('a second signal during a long drain ends the process at once (%s, then %s)', async (first, second) => {
    // The receiver answers after 30 s: the log records stay pending, the drain would last its 20 s.
    receiver.responder = () => ({ status: 200, delayMs: 30_000 });
    const started = await start(platform, { SHUTDOWN_TIMEOUT_MS: '20000', HANDLER_DELAY_MS: '0' });
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`${started.url}/order/${prefix}-s${i}`, oneShot)));
    expect(statuses.every((s) => s === 201)).toBe(true);
    await receiver.waitUntil(() => receiver.requests.length > 0, 'the first POST of log records');

    const signalledAt = Date.now();
    started.app.signal(first);
    await until(() => DRAIN_LINE.test(started.app.output), 'the drain line');
    const exitedEarly = await Promise.race([started.app.exited.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 300))]);
    expect(exitedEarly).toBe(false); // still draining

    const secondAt = Date.now();
    started.app.signal(second);
    const exit = await started.app.exited;
    const afterSecondMs = Date.now() - secondAt;

    expect(exit).toEqual({ code: null, signal: second });
    expect(started.app.output).toMatch(new RegExp(`${first} received and no shutdown hooks are enabled`));
    expect(afterSecondMs).toBeLessThan(1000);
    expect(Date.now() - signalledAt).toBeLessThan(5000); // far from the 20-s drain
    figures.push({ platform, case: `${first} then ${second}`, exit: exit.signal, afterSecondMs, totalMs: Date.now() - signalledAt });
  }, 60_000);

  it('a drain that cannot finish ends at shutdownTimeoutMs: the rest is dead-lettered and logged, the process ends by SIGTERM', async () => {
    receiver.responder = () => ({ status: 200, delayMs: 30_000 });
    const started = await start(platform, { SHUTDOWN_TIMEOUT_MS: '1500', HANDLER_DELAY_MS: '0' });
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`${started.url}/order/${prefix}-d${i}`, oneShot)));
    expect(statuses.every((s) => s === 201)).toBe(true);
    await receiver.waitUntil(() => receiver.requests.length > 0, 'the first POST of log records');

    const signalledAt = Date.now();
    started.app.signal('SIGTERM');
    const exit = await started.app.exited;
    const tookMs = Date.now() - signalledAt;

    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    expect(started.app.output).toMatch(/drains for up to 1500 ms/);
    expect(started.app.output).toMatch(/Shutdown deadline \(1500 ms\) passed with 20 items undelivered \(http: 20\).*they were dead-lettered/);
    expect(tookMs).toBeGreaterThanOrEqual(1400);
    expect(tookMs).toBeLessThan(1500 + 2000); // the sinks' own shutdown gets at most a second more
    expect([...(await jobIds())].filter((id) => id.startsWith(`${prefix}-d`))).toHaveLength(20);
    figures.push({ platform, case: 'deadline 1500 ms, receiver hung', undelivered: 20, exit: exit.signal, exitMs: tookMs });
  }, 60_000);

  it('with drainOnSignal: false, SIGTERM ends the process at once, as Node does by default', async () => {
    receiver.responder = () => ({ status: 200, delayMs: 30_000 });
    const started = await start(platform, { DRAIN_ON_SIGNAL: 'false', HANDLER_DELAY_MS: '0' });
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`${started.url}/order/${prefix}-f${i}`, oneShot)));
    expect(statuses.every((s) => s === 201)).toBe(true);
    await receiver.waitUntil(() => receiver.requests.length > 0, 'the first POST of log records');

    const signalledAt = Date.now();
    started.app.signal('SIGTERM');
    const exit = await started.app.exited;
    const tookMs = Date.now() - signalledAt;

    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    expect(tookMs).toBeLessThan(1000);
    expect(started.app.output).not.toMatch(/no shutdown hooks are enabled/);
    figures.push({ platform, case: 'drainOnSignal: false', exit: exit.signal, exitMs: tookMs });
  }, 60_000);

  it("with app.enableShutdownHooks() (after listen()), Nest's path drains: the library's listener stays out", async () => {
    const started = await start(platform, { SHUTDOWN_TIMEOUT_MS: '10000', SHUTDOWN_HOOKS: '1' });
    const clients = new Clients(started.url, 30);
    await until(() => clients.created.length >= 400, '400 responses');

    const signalledAt = Date.now();
    clients.signalled = true;
    started.app.signal('SIGTERM');
    // A load balancer stops sending to a terminating instance and lets go of its connections: Nest's
    // close waits for every connection (Fastify keeps an idle one 72 s by default).
    setTimeout(() => void clients.stop(), 200);
    const exit = await started.app.exited;
    const tookMs = Date.now() - signalledAt;
    await clients.stop();

    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    expect(clients.early).toEqual([]);
    expect(started.app.output).not.toMatch(/no shutdown hooks are enabled/);
    expect(started.app.output).not.toMatch(/undelivered|dead-lettered/);
    const delivered = await expectAllDelivered(clients.created);
    figures.push({ platform, case: 'enableShutdownHooks()', responses201: clients.created.length, ...delivered, exit: exit.signal, drainMs: tookMs });
  }, 60_000);
});

describe.each(platforms)('the stop-signal listener in one process ($name)', (platform) => {
  it('20 apps started and closed leave no SIGTERM or SIGINT listener behind and raise no MaxListenersExceededWarning', async () => {
    const before = { SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') };
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const apps: StartedApp[] = [];
    try {
      for (let i = 0; i < 20; i++) apps.push(await startApp(platform, { imports: [DeferredWorkModule.forRoot({ sinks: [new MemorySink()] })] }));
      // One listener per signal for all of them.
      expect({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') }).toEqual({ SIGTERM: before.SIGTERM + 1, SIGINT: before.SIGINT + 1 });
      for (const started of apps.splice(0, 19)) await started.close();
      expect(process.listenerCount('SIGTERM')).toBe(before.SIGTERM + 1); // one app still running
    } finally {
      for (const started of apps) await started.close();
    }
    expect({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') }).toEqual(before);

    // drainOnSignal: false installs nothing.
    const off = await startApp(platform, { imports: [DeferredWorkModule.forRoot({ sinks: [new MemorySink()], drainOnSignal: false })] });
    expect(process.listenerCount('SIGTERM')).toBe(before.SIGTERM);
    await off.close();

    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    process.off('warning', onWarning);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  }, 60_000);
});
