import { Controller, Get, HttpException, Inject, Req } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkInterceptor,
  DeferredWorkModule,
  MemorySink,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/** A base CRUD controller whose route reaches its scope through the request, not @Deferred(). */
class BaseOrders {
  constructor(@Inject(DeferredWork) protected readonly work: DeferredWork) {}

  @Get('inherited')
  inherited(@Req() req: object) {
    const scope = this.work.forRequest(req);
    scope.log('info', 'inherited');
    scope.job('mail', 'success-only', {});
    throw new HttpException('conflict', 409);
  }
}

@Controller('child')
@AfterResponse()
class ChildOrders extends BaseOrders {
  /** An accessor on a decorated controller must not be called while decorating. */
  get label(): string {
    return this.work ? 'orders' : 'none';
  }

  @Get('own')
  own(@Deferred() work: DeferredScope) {
    work.log('info', 'own');
    return this.label;
  }
}

@Controller('lonely')
class LonelyController {
  @Get()
  @AfterResponse()
  lonely(@Deferred() work: DeferredScope) {
    work.log('info', 'must not reach another application');
    return 'lonely';
  }
}

describe.each(platforms)('opening a request scope without a global interceptor ($name)', (platform) => {
  failOnUnhandledRejection();
  const apps: StartedApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it('class-level @AfterResponse() covers inherited routes that use forRequest(req), and leaves accessors alone', async () => {
    const sink = new MemorySink();
    const started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1 })],
      controllers: [ChildOrders],
    });
    apps.push(started);
    expect((await fetch(`${started.url}/child/inherited`)).status).toBe(409);
    expect(await (await fetch(`${started.url}/child/own`)).text()).toBe('orders');
    await sink.waitFor(2);
    const work = started.app.get(DeferredWork);
    await eventually(() => expect(work.stats().requests.finished).toBe(2));
    expect(sink.items.map((i) => (i.kind === 'log' ? i.message : i.name)).sort()).toEqual(['inherited', 'own']);
    expect(work.stats().skipped).toBe(1); // the success-only job of the 409
  });

  it("an application without DeferredWorkModule never borrows another application's scopes", async () => {
    const sink = new MemorySink();
    apps.push(
      await startApp(platform, {
        imports: [DeferredWorkModule.forRoot({ sinks: [sink] })],
        controllers: [ChildOrders],
      }),
    );
    const bare = await startApp(platform, { controllers: [LonelyController] });
    apps.push(bare);
    expect((await fetch(`${bare.url}/lonely`)).status).toBe(500); // DeferredContextError, said plainly
    await new Promise((r) => setTimeout(r, 30));
    expect(sink.items).toEqual([]);
  });

  it('registerInterceptor: false with asyncContext boots, for apps that bind the interceptor themselves', async () => {
    const sink = new MemorySink();
    const started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], asyncContext: true, registerInterceptor: false })],
      providers: [{ provide: APP_INTERCEPTOR, useExisting: DeferredWorkInterceptor }],
      controllers: [ChildOrders],
    });
    apps.push(started);
    expect((await fetch(`${started.url}/child/inherited`)).status).toBe(409);
    await sink.waitFor(1);
    expect(sink.items.map((i) => i.kind)).toEqual(['log']);
  });
});
