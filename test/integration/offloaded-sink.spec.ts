import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Controller, Get, Logger, Param } from '@nestjs/common';
import { jest } from '@jest/globals';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  type DeadLetter,
  HttpSink,
  OffloadedSink,
  type OffloadedSinkOptions,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { identityHolds, load, range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';

/**
 * OffloadedSink end to end: a Nest app (Express and Fastify) defers items whose sink runs in a real
 * worker thread (the built `dist/worker/sink-host.worker.js`), built there from a module of this
 * test (`test/fixtures/offload/file.sink.mjs`, which appends what it gets to a file) or from a
 * built-in sink. Crashes, hangs, refusals and bootstrap mistakes happen for real in the worker.
 */
const FIXTURE = new URL('../fixtures/offload/file.sink.mjs', import.meta.url);

@Controller()
class EventsController {
  @Get('log/:id')
  @AfterResponse()
  log(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.log('info', id === 'refuse' ? 'refuse-in-worker' : 'event', { id });
    return { id };
  }
}

const FAST: DeferredWorkModuleOptions = { flushIntervalMs: 2, maxBatchSize: 50, initialBackoffMs: 10, maxBackoffMs: 50, shutdownTimeoutMs: 5000 };

/** The ids the worker's file sink wrote, in order (one per delivered item). */
function written(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { fields: { id: string } }).fields.id);
}

const sorted = (ids: string[]) => [...ids].sort();
const paths = (ids: string[]) => ids.map((id) => `/log/${id}`);

failOnUnhandledRejection();

describe('OffloadedSink options', () => {
  const base = { name: 'file', module: FIXTURE, export: 'FileSink' };

  it.each([
    [{ ...base, module: './file.sink.mjs' }, /relative path.*require\.resolve\('\.\/my\.sink'\)/],
    [{ ...base, options: { file: 'x', onWrite: () => undefined } }, /options\.onWrite is a function, which cannot be passed to a worker thread/],
    [{ ...base, options: { client: new (class RedisClient {})() } }, /options\.client is an instance of RedisClient.*Pass connection options/],
    [{ ...base, name: '' }, /option "name" is required/],
    [{ ...base, kinds: ['job', 'callback'] }, /option "kinds" must be an array of 'job', 'log' and 'metric'/],
  ] as Array<[OffloadedSinkOptions, RegExp]>)('refuses what a worker cannot receive at construction, with the fix (%#)', (options, message) => {
    expect(() => new OffloadedSink(options)).toThrow(message);
  });
});

describe('OffloadedSink and the process lifetime', () => {
  it('an idle worker, and one whose factory failed after opening a handle, never keep the process alive', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'offload-exit-'));
    try {
      const entry = fileURLToPath(new URL('../../packages/nestjs-deferred-work/dist/index.js', import.meta.url));
      const child = spawn(process.execPath, [fileURLToPath(new URL('../fixtures/offload/exits.mjs', import.meta.url)), entry, fileURLToPath(new URL('../fixtures/offload/', import.meta.url)), join(dir, 'items')], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve(null);
        }, 10_000);
        child.once('exit', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      expect([code, output]).toEqual([0, expect.stringMatching(/attach failed as expected: .*the database is down[\s\S]*done; nothing should keep/)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(platforms)('OffloadedSink in a worker thread ($name)', (platform: Platform) => {
  let dir: string;
  let started: StartedApp | undefined;
  let work: DeferredWork;
  let letters: DeadLetter[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'offload-'));
    letters = [];
  });
  afterEach(async () => {
    await started?.close();
    started = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  async function setup(sinkOptions: Record<string, unknown>, options: DeferredWorkModuleOptions = {}, extra: Partial<OffloadedSinkOptions> = {}) {
    const sink = new OffloadedSink({ name: 'file', module: FIXTURE, export: 'FileSink', options: { file: join(dir, 'items'), ...sinkOptions }, ...extra });
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ ...FAST, ...options, sinks: [sink], deadLetter: (batch) => void letters.push(...batch) })],
      controllers: [EventsController],
    });
    work = started.app.get(DeferredWork);
    return sink;
  }

  it('delivers N requests as N items through the worker, after each response; its shutdown runs at close and ends the thread', async () => {
    await setup({});
    const ids = range(0, 300).map(String);
    const statuses = await load(started!.url, paths(ids), 20);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(await work.flush(10_000)).toBe(true);
    expect(sorted(written(join(dir, 'items')))).toEqual(sorted(ids));
    const stats = work.stats();
    expect(identityHolds(stats, 'file')).toBe(true);
    expect(stats.sinks.file).toMatchObject({ accepted: 300, delivered: 300, pending: 0, deadLettered: 0 });
    expect(stats.sinks.file.host).toMatchObject({ thread: 'worker', running: true, restarts: 0, writesLostToRestarts: 0 });
    expect(stats.sinks.file.host!.activeMs).toBeGreaterThan(0);
    expect(stats.sinks.file.host!.cpuMs).toBeGreaterThan(0); // Linux: read from /proc/thread-self/schedstat
    await started!.close();
    started = undefined;
    expect(readFileSync(join(dir, 'items.shutdown'), 'utf8')).toBe('shutdown\n');
    expect(work.stats().sinks.file.host!.running).toBe(false);
  });

  it('restarts a worker that crashed mid-write and retries its batch: nothing lost, the restart counted', async () => {
    await setup({ crashOnce: join(dir, 'crashed') });
    const ids = range(0, 100).map(String);
    const statuses = await load(started!.url, paths(ids), 10);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(await work.flush(10_000)).toBe(true);
    expect(existsSync(join(dir, 'crashed'))).toBe(true);
    expect(sorted(written(join(dir, 'items')))).toEqual(sorted(ids));
    const file = work.stats().sinks.file;
    expect(file).toMatchObject({ delivered: 100, deadLettered: 0, pending: 0 });
    expect(file.retried).toBeGreaterThan(0);
    expect(file.host).toMatchObject({ running: true, restarts: 1, writesLostToRestarts: 1 });
    expect(identityHolds(work.stats(), 'file')).toBe(true);
  });

  it("dead-letters an item the worker's sink refuses (not retryable) and delivers the rest of its batch", async () => {
    await setup({});
    const statuses = await load(started!.url, paths(['a', 'refuse', 'b']), 1);
    expect(statuses).toEqual([200, 200, 200]);
    expect(await work.flush(10_000)).toBe(true);
    expect(sorted(written(join(dir, 'items')))).toEqual(['a', 'b']);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ sink: 'file', reason: 'not-retryable', error: 'refused by the worker sink', attempts: 1 });
  });

  it('reports a rejection the sink left unhandled in the worker as a warning; the worker and the app carry on', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      await setup({ rejectUnhandled: true });
      await load(started!.url, paths(['a', 'b']), 1);
      expect(await work.flush(10_000)).toBe(true);
      await eventually(() => expect(warn).toHaveBeenCalled());
      expect(String(warn.mock.calls[0][0])).toMatch(/sink "file" in its worker thread: unhandled rejection \(ignored\): left unhandled by the sink/);
      expect(sorted(written(join(dir, 'items')))).toEqual(['a', 'b']);
      expect(work.stats().sinks.file.host).toMatchObject({ restarts: 0 });
    } finally {
      warn.mockRestore();
    }
  });

  it('ends shutdown by its deadline when the sink hangs: the items are dead-lettered as shutdown and the thread ended', async () => {
    await setup({ hang: true }, { shutdownTimeoutMs: 800, writeTimeoutMs: 200, maxAttempts: 1000 }, { closeTimeoutMs: 500 });
    await load(started!.url, paths(['a', 'b', 'c']), 3);
    await eventually(() => expect(work.stats().sinks.file.failedWrites).toBeGreaterThan(0));
    const closing = Date.now();
    await started!.close();
    started = undefined;
    expect(Date.now() - closing).toBeLessThan(8000); // bounded: 800 ms drain + 500 ms close, with slack for CI
    const file = work.stats().sinks.file;
    expect(file).toMatchObject({ delivered: 0, pending: 0, deadLettered: 3 });
    // The write in flight at the deadline is told apart (its items may have been delivered); the rest was not sent.
    expect(letters.filter((l) => l.reason !== 'shutdown' && l.reason !== 'shutdown-in-flight')).toEqual([]);
    expect(letters).toHaveLength(3);
    expect(file.host!.running).toBe(false);
  });

  it.each([
    ['notASink', {}, /export "notASink" of .*file\.sink\.mjs is a number, not a class or function/],
    ['missing', {}, /export "missing" of .*file\.sink\.mjs is missing.*the module exports: .*FileSink/],
    ['broken', {}, /could not build its sink from .*\(export "broken"\): cannot connect to the moon/],
    ['FileSink', { kinds: ['log'] }, /option "kinds" lists job, which the worker's sink does not take \(it takes log\)/],
  ])('fails the bootstrap when the worker cannot build the sink (%s), saying why', async (name, sinkOptions, message) => {
    const sink = new OffloadedSink({ name: 'file', module: FIXTURE, export: name, options: { file: join(dir, 'items'), ...sinkOptions }, kinds: ['job', 'log'] });
    await expect(
      startApp(platform, { imports: [DeferredWorkModule.forRoot({ sinks: [sink] })], controllers: [EventsController] }),
    ).rejects.toThrow(message);
    await sink.shutdown();
  });

  it('a worker that keeps ignoring aborted writes is replaced; the abandoned writes are not kept', async () => {
    await setup({ hang: true }, { writeTimeoutMs: 100, maxAttempts: 1000, initialBackoffMs: 10, maxBackoffMs: 20, shutdownTimeoutMs: 1000 }, { closeTimeoutMs: 200 });
    await load(started!.url, paths(['a']), 1);
    // three writes time out (100 ms + 1 s grace each) and go unanswered (1.5 s each): then a new worker
    await eventually(() => expect(work.stats().sinks.file.host!.restarts).toBeGreaterThanOrEqual(1), 15_000);
    expect(work.stats().sinks.file).toMatchObject({ delivered: 0, deadLettered: 0, pending: 1 });
  });

  it('sends what an in-process sink would: the JSON form of the data (toJSON, Buffer), not a structured clone', async () => {
    class Money {
      constructor(readonly cents: number) {}
      toJSON() {
        return `${(this.cents / 100).toFixed(2)} EUR`;
      }
    }
    const receiver = await HttpReceiver.start();
    try {
      const inProcess = new HttpSink({ name: 'direct', url: receiver.url('/direct') });
      const offloaded = HttpSink.offloaded({ name: 'offloaded', url: receiver.url('/offloaded') });
      await offloaded.attach();
      const item = { kind: 'log' as const, level: 'info' as const, message: 'paid', fields: { price: new Money(1250), raw: Buffer.from('hi') }, when: 'always' as const, createdAt: 1 };
      const context = { signal: new AbortController().signal, attempt: 1 };
      await inProcess.write([item], context);
      await offloaded.write([item], context);
      await offloaded.shutdown();
      inProcess.shutdown();
      expect(receiver.delivered('/offloaded')).toEqual(receiver.delivered('/direct'));
      expect(receiver.delivered('/offloaded')).toEqual([expect.objectContaining({ fields: { price: '12.50 EUR', raw: { type: 'Buffer', data: [104, 105] } } })]);
    } finally {
      await receiver.close();
    }
  });

  it('offloads the built-in HTTP sink: N requests, N items at the receiver', async () => {
    const receiver = await HttpReceiver.start();
    try {
      started = await startApp(platform, {
        imports: [DeferredWorkModule.forRoot({ ...FAST, sinks: [HttpSink.offloaded({ url: new URL(receiver.url('/items')), gzip: true })] })],
        controllers: [EventsController],
      });
      work = started.app.get(DeferredWork);
      const ids = range(0, 200).map(String);
      await load(started.url, paths(ids), 20);
      expect(await work.flush(10_000)).toBe(true);
      const got = receiver.delivered('/items').map((item) => (item as { fields: { id: string } }).fields.id);
      expect(sorted(got)).toEqual(sorted(ids));
      expect(work.stats().sinks.http).toMatchObject({ delivered: 200, host: { thread: 'worker', restarts: 0 } });
    } finally {
      await started?.close();
      started = undefined;
      await receiver.close();
    }
  });
});
