import { Controller, Get, Module, Param } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { DeferredWorkTesting, withMemorySinks } from 'nestjs-deferred-work/testing';
import { failOnUnhandledRejection, platforms } from '../support/platforms';
import { RecordingSink } from '../support/recording.sink';

const production = new RecordingSink('http');
production.behaviour = 'reject'; // a real sink that must never be reached from the tests below

const effects: string[] = [];

@Controller()
class ShopController {
  @Get('buy/:id')
  @AfterResponse()
  buy(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'receipt', { id });
    work.log('info', 'bought', { id });
    work.run(() => void effects.push(`callback ${id}`));
    effects.push(`handler ${id} returns`);
    return { id };
  }
}

@Module({
  imports: [DeferredWorkModule.forRoot({ sinks: [production], routing: { default: 'http' } })],
  controllers: [ShopController],
})
class ShopModule {}

describe.each(platforms)('nestjs-deferred-work/testing ($name)', (platform) => {
  failOnUnhandledRejection();

  async function start(inline: boolean) {
    const moduleRef = await withMemorySinks(Test.createTestingModule({ imports: [ShopModule] }), { inline }).compile();
    const app = moduleRef.createNestApplication(platform.adapter() as never, { logger: false });
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    return { app, url: `http://127.0.0.1:${port}` };
  }

  beforeEach(() => {
    effects.length = 0;
  });

  it('withMemorySinks swaps every sink for a memory sink of the same name; settled() awaits the request’s work', async () => {
    const { app, url } = await start(false);
    const deferred = DeferredWorkTesting.from(app);
    const responses = await Promise.all(['1', '2', '3'].map((id) => fetch(`${url}/buy/${id}`).then((r) => r.json())));
    expect(responses).toEqual([{ id: '1' }, { id: '2' }, { id: '3' }]);
    await deferred.settled();
    expect(deferred.items('job').map((j) => (j.data as { id: string }).id).sort()).toEqual(['1', '2', '3']);
    expect(deferred.items('log')).toHaveLength(3);
    expect(deferred.sink('http').delivered).toBe(6);
    expect(effects.filter((e) => e.startsWith('callback'))).toHaveLength(3);
    expect(production.writes).toHaveLength(0);
    expect(() => deferred.sink('bull')).toThrow(/no memory sink named "bull" \(sinks: http\)/);
    await app.close();
  });

  it('inline mode runs deferred work at once, inside the handler', async () => {
    const { app, url } = await start(true);
    const deferred = DeferredWorkTesting.from(app);
    await fetch(`${url}/buy/9`);
    // The callback ran before the handler returned, and the items were written when they were deferred.
    expect(effects).toEqual(['callback 9', 'handler 9 returns']);
    expect(deferred.items().map((i) => i.kind)).toEqual(['job', 'log']);
    await deferred.settled();
    expect(production.writes).toHaveLength(0);
    await app.close();
  });
});

describe("withMemorySinks and the app's disk spool", () => {
  it("never opens the app's spool (a test must not replay, ack away or lock what a real run left there)", async () => {
    const { mkdtempSync, existsSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'dw-testing-spool-'));
    @Module({
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new RecordingSink('http'), new RecordingSink('jobs')],
          routing: { default: 'http', job: 'jobs' },
          spool: { dir },
          sinkOptions: { jobs: { spool: { dir: join(dir, 'own') }, maxBatchSize: 10 } },
        }),
      ],
    })
    class SpooledModule {}
    try {
      const first = await withMemorySinks(Test.createTestingModule({ imports: [SpooledModule] })).compile();
      // A second one at the same time (another Jest worker) would have found the directory locked.
      const second = await withMemorySinks(Test.createTestingModule({ imports: [SpooledModule] })).compile();
      const work = first.get(DeferredWork);
      work.metric('m', 1);
      await DeferredWorkTesting.from(first).settled();
      expect(DeferredWorkTesting.from(first).sink('http').items).toHaveLength(1);
      expect(work.stats().sinks.http!.spool).toBeUndefined();
      expect(work.stats().sinks.jobs!.spool).toBeUndefined();
      expect(existsSync(join(dir, 'http')) || existsSync(join(dir, 'own'))).toBe(false);
      await Promise.all([first.close(), second.close()]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
