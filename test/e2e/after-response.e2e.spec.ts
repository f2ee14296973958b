import { Controller, Get, HttpException, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { platforms, startApp, type StartedApp } from '../support/platforms';

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
}


describe.each(platforms)('@AfterResponse() on $name', (platform) => {
  let started: StartedApp;
  let sink: MemorySink;

  beforeEach(async () => {
    sink = new MemorySink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink] })],
      controllers: [OrdersController],
    });
  });
  afterEach(() => started.close());

  it('delivers job, log and metric after a 2xx', async () => {
    const res = await fetch(`${started.url}/ok/7`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: '7' });
    await sink.waitFor(3);
    expect(sink.items.map((i) => i.kind).sort()).toEqual(['job', 'log', 'metric']);
    const stats = started.app.get(DeferredWork).stats();
    expect(stats.accepted).toBe(stats.delivered + stats.pending + stats.dropped + stats.deadLettered);
  });

  it('flushes always and failure items after an error response, not success items', async () => {
    const res = await fetch(`${started.url}/fail/9`);
    expect(res.status).toBe(409);
    await started.app.get(DeferredWork).flush();
    const names = sink.items.map((i) => (i.kind === 'log' ? i.message : i.kind === 'metric' ? i.name : i.name));
    expect(names.sort()).toEqual(['failed', 'failed']);
    expect(started.app.get(DeferredWork).stats().skipped).toBe(2);
  });
});
