import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DeferredWork } from 'nestjs-deferred-work';
import { failOnUnhandledRejection, platforms, useMemoryApp } from '../support/platforms';

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
  const ctx = useMemoryApp(platform, {}, { providers: [Warmup] });

  it('from onModuleInit and from a timer', async () => {
    await ctx.sink.waitFor(2);
    expect(ctx.sink.items.map((i) => i.kind).sort()).toEqual(['job', 'log']);
    const warmup = ctx.started.app.get(Warmup);
    await new Promise<void>((resolve) => setTimeout(() => resolve(warmup.tick()), 5));
    await ctx.sink.waitFor(3);
    expect(ctx.sink.ofKind('metric')[0]).toMatchObject({ name: 'cron.tick', value: 1 });
    const work = ctx.started.app.get(DeferredWork);
    expect(await work.flush(1000)).toBe(true);
    expect(work.stats()).toMatchObject({ accepted: 4, delivered: 4, requests: { finished: 0 } });
  });
});
