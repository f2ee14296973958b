import { Controller, Get, HttpException, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

const gates = new Map<string, Promise<void>>();

@Controller()
class OrdersController {
  @Get('ok/:id')
  @AfterResponse()
  ok(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'confirm', { id });
    work.log('info', 'order', { id });
    work.metric('orders', 1, { id });
    return { id };
  }

  @Get('fail/:id')
  @AfterResponse()
  fail(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'confirm', { id });
    work.log('error', 'failed', { id });
    work.metric('failed', 1, { id }, { when: 'failure' });
    work.log('info', 'only-on-success', { id }, { when: 'success' });
    throw new HttpException('nope', 409);
  }

  @Get('crash')
  @AfterResponse()
  crash(@Deferred() work: DeferredScope) {
    work.log('error', 'crashed');
    work.job('mail', 'never', {});
    throw new Error('unexpected');
  }

  @Get('slow/:id')
  @AfterResponse()
  async slow(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'success-before', { id });
    work.log('info', 'always-before', { id });
    await gates.get(id);
    work.log('warn', 'failure-after', { id }, { when: 'failure' });
    work.job('mail', 'success-after', { id });
    return { id };
  }

  @Get('plain')
  plain(@Deferred() work: DeferredScope) {
    work.log('info', 'undecorated');
    return 'plain';
  }
}

@Controller('class')
@AfterResponse({ when: { log: 'failure' } })
class DecoratedClassController {
  @Get('a')
  a(@Deferred() work: DeferredScope) {
    work.log('info', 'class-level failure-only log');
    work.metric('class-metric', 1);
    return 'a';
  }

  @Get('b')
  @AfterResponse({ when: { log: 'always' } })
  b(@Deferred() work: DeferredScope) {
    work.log('info', 'method override');
    return 'b';
  }
}

const label = (i: { kind: string; name?: string; message?: string }) => i.message ?? i.name;

describe.each(platforms)('@AfterResponse() outcomes on $name', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let sink: MemorySink;
  let work: DeferredWork;

  beforeEach(async () => {
    sink = new MemorySink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1 })],
      controllers: [OrdersController, DecoratedClassController],
    });
    work = started.app.get(DeferredWork);
  });
  afterEach(() => started.close());

  it('delivers job, log and metric after a 2xx, keeping the accounting identity', async () => {
    const res = await fetch(`${started.url}/ok/7`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: '7' });
    await sink.waitFor(3);
    expect(sink.items.map((i) => i.kind).sort()).toEqual(['job', 'log', 'metric']);
    expect(sink.ofKind('job')[0]).toMatchObject({ queue: 'mail', name: 'confirm', data: { id: '7' } });
    const stats = work.stats();
    expect(stats).toMatchObject({ accepted: 3, delivered: 3, pending: 0, requests: { finished: 1, aborted: 0 } });
  });

  it('after an HttpException response flushes always and failure items, not success items', async () => {
    const res = await fetch(`${started.url}/fail/9`);
    expect(res.status).toBe(409);
    await sink.waitFor(2);
    await eventually(() => expect(work.stats().skipped).toBe(2));
    expect(sink.items.map(label).sort()).toEqual(['failed', 'failed']);
  });

  it('after an unexpected error (500 from the exception filter) still flushes always items', async () => {
    const res = await fetch(`${started.url}/crash`);
    expect(res.status).toBe(500);
    await sink.waitFor(1);
    await eventually(() => expect(work.stats().skipped).toBe(1));
    expect(sink.items.map(label)).toEqual(['crashed']);
  });

  it('an aborted client is an aborted outcome: always/failure items run, success items do not', async () => {
    let release!: () => void;
    gates.set('ab', new Promise<void>((r) => (release = r)));
    const controller = new AbortController();
    const pending = fetch(`${started.url}/slow/ab`, { signal: controller.signal }).catch((e: Error) => e);
    await eventually(() => expect(gates.has('ab')).toBe(true));
    await new Promise((r) => setTimeout(r, 30)); // the handler is now waiting on the gate
    controller.abort();
    expect(await pending).toMatchObject({ name: 'AbortError' });
    await eventually(() => expect(work.stats().requests.aborted).toBe(1));
    release(); // the handler goes on after the client left; its later items are judged at once
    await sink.waitFor(2);
    await eventually(() => expect(work.stats().skipped).toBe(2));
    expect(sink.items.map(label).sort()).toEqual(['always-before', 'failure-after']);
    expect(work.stats().requests.finished).toBe(0);
  });

  it('on an undecorated route, @Deferred() items go straight to the dispatcher', async () => {
    expect(await (await fetch(`${started.url}/plain`)).text()).toBe('plain');
    await sink.waitFor(1);
    expect(sink.items.map(label)).toEqual(['undecorated']);
    expect(work.stats().requests.finished).toBe(0); // not a collected request
  });

  it('a class-level @AfterResponse() applies to every route; a method decorator overrides it per kind', async () => {
    await (await fetch(`${started.url}/class/a`)).text();
    await (await fetch(`${started.url}/class/b`)).text();
    await sink.waitFor(2);
    await eventually(() => expect(work.stats().requests.finished).toBe(2));
    expect(sink.items.map(label).sort()).toEqual(['class-metric', 'method override']);
    expect(work.stats().skipped).toBe(1);
  });
});
