import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DeferredWork, DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

@Injectable()
class Warmup implements OnModuleInit {
  constructor(@Inject(DeferredWork) private readonly work: DeferredWork) {}

  onModuleInit() {
    this.work.log('info', 'booted', { phase: 'onModuleInit' });
    this.work.job('cache', 'warm', { keys: 3 });
  }

  tick() {
    this.work.metric('cron.tick', 1);
    this.work.run(async () => undefined);
  }
}

describe.each(platforms)('calls outside a request still dispatch ($name)', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let sink: MemorySink;

  beforeEach(async () => {
    sink = new MemorySink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink] })],
      providers: [Warmup],
    });
  });
  afterEach(() => started.close());

  it('from onModuleInit and from a timer', async () => {
    await sink.waitFor(2);
    expect(sink.items.map((i) => i.kind).sort()).toEqual(['job', 'log']);
    const warmup = started.app.get(Warmup);
    await new Promise<void>((resolve) => setTimeout(() => resolve(warmup.tick()), 5));
    await sink.waitFor(3);
    expect(sink.ofKind('metric')[0]).toMatchObject({ name: 'cron.tick', value: 1 });
    const work = started.app.get(DeferredWork);
    expect(await work.flush(1000)).toBe(true);
    expect(work.stats()).toMatchObject({ accepted: 4, delivered: 4, requests: { finished: 0 } });
  });
});
