import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import {
  DeferredWork,
  DeferredWorkHealthIndicator,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  HttpSink,
  RedriveInProgressError,
  deadLettersController,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/**
 * Dead letters kept in the (default, memory) store and redriven, on Express and Fastify, against a
 * real HTTP receiver that refuses (503) and later accepts: redrive delivers each item exactly once
 * with its id, a redrive that fails again is dead-lettered again and counted, one redrive at a time;
 * the controller the app mounts under its own guard; readiness and liveness.
 */

const TOKEN = 'secret-admin-token';

@Injectable()
class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-admin-token'] === TOKEN;
  }
}

interface WireItem {
  id: string;
  data: { n: number };
}

failOnUnhandledRejection();

describe.each(platforms)('dead letters on $name', (platform) => {
  let receiver: HttpReceiver;
  let started: StartedApp | undefined;
  let work: DeferredWork;

  beforeEach(async () => {
    receiver = await HttpReceiver.start(() => ({ status: 503 }));
  });
  afterEach(async () => {
    await started?.close();
    started = undefined;
    await receiver.close();
  });

  async function start(options: DeferredWorkModuleOptions = {}): Promise<void> {
    started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new HttpSink({ name: 'http', url: receiver.url('/ingest') })],
          sinkOptions: { http: { maxAttempts: 2, initialBackoffMs: 10, maxBackoffMs: 20, flushIntervalMs: 5 } },
          shutdownTimeoutMs: 1000,
          ...options,
        }),
      ],
      providers: [AdminGuard],
      controllers: [deadLettersController({ guards: [AdminGuard], path: 'admin/dead-letters' })],
    });
    work = started.app.get(DeferredWork);
  }

  const delivered = () => receiver.delivered('/ingest') as WireItem[];
  const sink = () => work.stats().sinks.http!;
  const identity = () => {
    const s = sink();
    expect(s.accepted).toBe(s.delivered + s.pending + s.dropped + s.deadLettered);
  };

  it('redrives each dead letter exactly once to a receiver that recovered; a redrive that fails again is dead-lettered again and counted', async () => {
    await start();
    for (let n = 0; n < 5; n++) work.job('emails', 'send', { n });
    await eventually(async () => expect(await work.countDeadLetters()).toBe(5), 10_000);
    const { records } = await work.listDeadLetters();
    const ids = records.map((r) => r.item.id);
    expect(records[0]).toMatchObject({ sink: 'http', reason: 'attempts-exhausted', attempts: 2, redrives: 0, lastError: { code: '503' }, firstError: { code: '503' } });

    const dry = await work.redriveDeadLetters({ filter: {} }, { dryRun: true });
    expect(dry).toEqual({ dryRun: true, matched: 5, redriven: 5, skipped: [] });
    expect(await work.countDeadLetters()).toBe(5);
    expect(sink().redriven).toBe(0);

    // Still refused: dead-lettered again, same ids, the first error and the redrive count kept.
    expect(await work.redriveDeadLetters({ filter: { sink: 'http' } })).toMatchObject({ matched: 5, redriven: 5 });
    await eventually(async () => expect(await work.countDeadLetters({ sink: 'http' })).toBe(5), 10_000);
    const again = (await work.listDeadLetters()).records;
    expect(again.map((r) => r.item.id).sort()).toEqual([...ids].sort());
    for (const record of again) {
      expect(record.redrives).toBe(1);
      expect(record.firstAt).toBeLessThanOrEqual(record.at);
      expect(record.firstError!.at).toBeLessThan(record.lastError!.at);
    }
    expect(sink()).toMatchObject({ accepted: 10, delivered: 0, deadLettered: 10, redriven: 5, pending: 0 });
    identity();

    receiver.responder = () => ({ status: 200 });
    const result = await work.redriveDeadLetters({ ids: again.map((r) => r.id).concat('dw-missing:http') });
    expect(result).toEqual({ dryRun: false, matched: 5, redriven: 5, skipped: [{ id: 'dw-missing:http', reason: 'not found' }] });
    expect(await work.flush(5000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100)); // room for a duplicate, were there one
    expect(delivered().map((item) => item.id).sort()).toEqual([...ids].sort());
    expect(sink()).toMatchObject({ accepted: 15, delivered: 5, deadLettered: 10, redriven: 10, pending: 0 });
    identity();
    expect(await work.countDeadLetters()).toBe(0);
  });

  it('refuses a redrive while one is running, directly and through the controller (409)', async () => {
    await start();
    for (let n = 0; n < 4; n++) work.job('emails', 'send', { n });
    await eventually(async () => expect(await work.countDeadLetters()).toBe(4), 10_000);
    receiver.responder = () => ({ status: 200 });
    const running = work.redriveDeadLetters({ filter: {} }, { perSecond: 4 }); // about a second
    await expect(work.redriveDeadLetters({ filter: {} })).rejects.toThrow(RedriveInProgressError);
    await expect(work.redriveDeadLetters({ filter: {} })).rejects.toThrow(/already running .* Wait for its promise to resolve/);
    const res = await fetch(`${started!.url}/admin/dead-letters/redrive`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-token': TOKEN },
      body: JSON.stringify({ filter: {} }),
    });
    expect(res.status).toBe(409);
    expect(await running).toMatchObject({ matched: 4, redriven: 4 });
    await receiver.waitForDelivered(4, '/ingest');
  });

  it('mounts the controller under the app guard only: refused without it, list, count, get, redrive, discard and purge with it', async () => {
    await start();
    for (let n = 0; n < 3; n++) work.job('emails', 'send', { n });
    await eventually(async () => expect(await work.countDeadLetters()).toBe(3), 10_000);
    const base = `${started!.url}/admin/dead-letters`;
    const call = (path: string, init: RequestInit = {}, token: string | null = TOKEN) =>
      fetch(`${base}${path}`, {
        ...init,
        headers: { ...(init.body ? { 'content-type': 'application/json' } : {}), ...(token ? { 'x-admin-token': token } : {}) },
      });

    for (const [path, init] of [['', {}], ['/count', {}], ['/redrive', { method: 'POST', body: '{"filter":{}}' }], ['/purge', { method: 'POST', body: '{"filter":{}}' }]] as const) {
      expect((await call(path, init, null)).status).toBe(403);
      expect((await call(path, init, 'wrong')).status).toBe(403);
    }
    expect(await work.countDeadLetters()).toBe(3); // nothing was redriven or purged

    const page = (await (await call('?limit=2&sink=http')).json()) as { records: Array<{ id: string }>; next?: string };
    expect(page.records).toHaveLength(2);
    const rest = (await (await call(`?limit=2&after=${page.next}`)).json()) as { records: Array<{ id: string }>; next?: string };
    expect(rest.records).toHaveLength(1);
    expect(rest.next).toBeUndefined();
    expect(await (await call('/count?reason=attempts-exhausted')).json()).toEqual({ count: 3 });
    expect((await call('?reason=bogus')).status).toBe(400);
    const one = page.records[0].id;
    expect(await (await call(`/${encodeURIComponent(one)}`)).json()).toMatchObject({ id: one, sink: 'http' });
    expect((await call('/dw-none%3Ahttp')).status).toBe(404);
    expect(await (await call('/redrive', { method: 'POST', body: JSON.stringify({ ids: [one], dryRun: true }) })).json()).toEqual({
      dryRun: true, matched: 1, redriven: 1, skipped: [],
    });
    expect((await call('/purge', { method: 'POST', body: '{}' })).status).toBe(400);
    expect(await (await call(`/${encodeURIComponent(one)}`, { method: 'DELETE' })).json()).toEqual({ discarded: 1 });
    expect(await (await call('/purge', { method: 'POST', body: '{"filter":{"sink":"http"}}' })).json()).toEqual({ purged: 2 });
    expect(await work.countDeadLetters()).toBe(0);
    expect(sink().redriven).toBe(0);
  });

  it('readiness is down while the sink fails every write, liveness stays up; both recover with the receiver', async () => {
    await start({ sinkOptions: { http: { maxAttempts: 1000, initialBackoffMs: 20, maxBackoffMs: 40, flushIntervalMs: 5 } } });
    const health = started!.app.get(DeferredWorkHealthIndicator);
    work.job('emails', 'send', { n: 1 });
    await eventually(() => expect(health.isReady('dw', { failingForMs: 300 }).dw.status).toBe('down'), 5000, 20);
    const ready = health.isReady('dw', { failingForMs: 300 }).dw;
    expect(ready.reasons[0]).toMatch(/^sink "http" has failed every write for \d+ s \(over 300 ms\)/);
    expect(ready.sinks.http).toMatchObject({ pending: 1, dropped: 0, failingSince: expect.any(Number) });
    expect(health.isLive('dw', { stalledMs: 100 }).dw).toEqual({ status: 'up', reasons: [] });
    // The deprecated check does not know about the outage (nothing dropped yet).
    expect(health.isHealthy('dw').dw.status).toBe('up');
    receiver.responder = () => ({ status: 200 });
    await eventually(() => expect(health.isReady('dw', { failingForMs: 300 }).dw).toMatchObject({ status: 'up', reasons: [] }), 5000, 20);
    expect(sink()).toMatchObject({ delivered: 1, pending: 0 });
  });

  it('liveness is down when the pipeline is wedged: every callback slot held by a callback that ignores its timeout, others waiting', async () => {
    await start({ callbacks: { concurrency: 1, timeoutMs: 50 }, shutdownTimeoutMs: 200 });
    const health = started!.app.get(DeferredWorkHealthIndicator);
    work.run(() => new Promise(() => {}), { when: 'always' }); // never settles, ignores its signal
    work.run(() => undefined, { when: 'always' });
    expect(health.isLive('dw', { stalledMs: 100 }).dw.status).toBe('up');
    await eventually(() => expect(health.isLive('dw', { stalledMs: 100 }).dw.status).toBe('down'), 5000, 20);
    expect(health.isLive('dw', { stalledMs: 100 }).dw.reasons).toEqual([
      expect.stringMatching(/^callback runner: 1 callback\(s\) waiting, every slot held \(1 by callbacks past their timeout/),
    ]);
    // The default threshold (2 minutes past the timeout) is not reached yet.
    expect(health.isLive('dw').dw.status).toBe('up');
  });
});
