import { Controller, Get, Logger, Param } from '@nestjs/common';
import { jest } from '@jest/globals';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, HttpSink } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp } from '../support/platforms';

/**
 * A shutdown past its deadline tells sent from lost: the HTTP sink's first batch reaches a receiver
 * that answers only after the deadline (the batch is in flight, and has arrived), the rest wait behind
 * it. Its items are dead-lettered `shutdown-in-flight` (they may have been delivered: here they did
 * arrive), the others `shutdown`, and the shutdown's error line gives both numbers.
 */
failOnUnhandledRejection();

@Controller()
class EntriesController {
  @Get('entries/:mark/:n')
  @AfterResponse()
  entries(@Param('mark') mark: string, @Param('n') n: string, @Deferred() work: DeferredScope) {
    for (let i = 0; i < Number(n); i++) work.log('info', 'entry', { mark: `${mark}-${i}` });
    return { mark };
  }
}

describe.each(platforms)('a shutdown past its deadline with a write in flight ($name)', (platform) => {
  let receiver: HttpReceiver;
  beforeAll(async () => {
    receiver = await HttpReceiver.start((_request, seq) => (seq === 0 ? { status: 200, delayMs: 4000 } : { status: 200 }));
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('the in-flight batch is dead-lettered shutdown-in-flight, the rest shutdown, and the log line splits the counts', async () => {
    const path = `/in-flight-${platform.name}`;
    const errors = jest.spyOn(Logger.prototype, 'error');
    const started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [new HttpSink({ url: receiver.url(path) })],
          sinkOptions: { http: { maxBatchSize: 5, flushIntervalMs: 1 } },
          shutdownTimeoutMs: 1000,
          deadLetterCapacity: 100,
        }),
      ],
      controllers: [EntriesController],
    });
    const work = started.app.get(DeferredWork);
    try {
      // One request defers the first batch's five items at once, another the seven behind it.
      expect((await load(started.url, ['/entries/first/5'], 1)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(receiver.requestsTo(path)).toHaveLength(1));
      expect((await load(started.url, ['/entries/later/7'], 1)).every((s) => s === 200)).toBe(true);
      await eventually(async () => expect(work.stats().sinks.http).toMatchObject({ accepted: 12, inFlight: 5 }));
      const began = Date.now();
      await started.close();
      const took = Date.now() - began;
      const letters = work.deadLetters();
      const byReason = (reason: string) => letters.filter((l) => l.reason === reason).map((l) => (l.item as unknown as { fields: { mark: string } }).fields.mark).sort();
      expect(byReason('shutdown-in-flight')).toEqual(range(0, 5).map((i) => `first-${i}`));
      expect(byReason('shutdown')).toEqual(range(0, 7).map((i) => `later-${i}`).sort());
      // They did arrive: a redrive would deliver them twice.
      expect(receiver.requestsTo(path)[0]!.items).toHaveLength(5);
      const line = errors.mock.calls.map((call) => String(call[0])).find((m) => m.startsWith('Shutdown deadline'));
      expect(line).toMatch(/passed with 12 items undelivered \(http: 12\) — 7 never sent, and 5 in a write still in flight \(http: 5\), which may have been delivered/);
      console.log(`[shutdown in flight, ${platform.name}] app.close() took ${took} ms against shutdownTimeoutMs 1000`);
    } finally {
      errors.mockRestore();
    }
  }, 30_000);
});
