import { Controller, Get } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';
import { RecordingSink } from '../support/recording.sink';

@Controller()
class WorkController {
  @Get('work')
  @AfterResponse()
  work(@Deferred() work: DeferredScope) {
    work.log('info', 'hello');
    work.job('q', 'j', { a: 1 });
    work.run(() => Promise.reject(new Error('callback rejected')), { when: 'always' });
    work.run(() => {
      throw new Error('callback threw');
    });
    return { ok: true };
  }
}

describe.each(platforms)('a failing sink never changes the response ($name)', (platform) => {
  const unhandled = failOnUnhandledRejection();

  describe.each(['throw', 'reject', 'hang'] as const)('sink that %ss', (behaviour) => {
    let started: StartedApp;
    let sink: RecordingSink;

    beforeEach(async () => {
      sink = new RecordingSink();
      sink.behaviour = behaviour;
      started = await startApp(platform, {
        imports: [
          DeferredWorkModule.forRoot({
            sinks: [sink],
            maxAttempts: 2,
            initialBackoffMs: 1,
            writeTimeoutMs: 20,
            shutdownTimeoutMs: 200,
          }),
        ],
        controllers: [WorkController],
      });
    });
    afterEach(() => started.close());

    it('responds 200 with the body, dead-letters after maxAttempts, and no rejection escapes', async () => {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${started.url}/work`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ ok: true });
      }
      const work = started.app.get(DeferredWork);
      await eventually(() => expect(work.stats().pending).toBe(0), 5000);
      const stats = work.stats();
      expect(stats.sinks.recording).toMatchObject({ accepted: 10, delivered: 0, deadLettered: 10 });
      expect(stats.sinks.callbacks).toMatchObject({ accepted: 10, delivered: 0, deadLettered: 10, retried: 0 });
      expect(stats.accepted).toBe(stats.delivered + stats.pending + stats.dropped + stats.deadLettered);
      expect(work.deadLetters().some((l) => l.error === 'callback threw')).toBe(true);
      await new Promise((r) => setImmediate(r));
      expect(unhandled.seen).toEqual([]);
    });
  });
});
