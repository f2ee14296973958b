import { DeferredWork, DeferredWorkModule, type DeadLetterStore, HttpSink } from 'nestjs-deferred-work';
import { eventually } from './eventually';
import { HttpReceiver } from './http-receiver';
import { type Platform, startApp } from './platforms';

/**
 * A durable dead-letter store in an app: an HTTP sink (maxAttempts 2) whose receiver refuses (503)
 * dead-letters 10 jobs into `store()`; the app closes; a second app on a new `store()` lists the 10
 * and redrives them to the receiver, recovered: each arrives exactly once, with its item id.
 */
export async function deadLettersOutliveTheApp(platform: Platform, store: () => DeadLetterStore): Promise<void> {
  const receiver = await HttpReceiver.start(() => ({ status: 503 }));
  const module = () =>
    DeferredWorkModule.forRoot({
      sinks: [new HttpSink({ name: 'http', url: receiver.url('/ingest') })],
      sinkOptions: { http: { maxAttempts: 2, initialBackoffMs: 10, maxBackoffMs: 20 } },
      deadLetter: { store: store() },
      shutdownTimeoutMs: 1000,
    });
  const first = await startApp(platform, { imports: [module()] });
  const work = first.app.get(DeferredWork);
  for (let i = 0; i < 10; i++) work.job('emails', 'send', { i });
  await eventually(async () => expect(await work.countDeadLetters()).toBe(10), 10_000, 20);
  await first.close();

  receiver.responder = () => ({ status: 200 });
  const second = await startApp(platform, { imports: [module()] });
  try {
    const again = second.app.get(DeferredWork);
    const { records } = await again.listDeadLetters({ limit: 100 });
    expect(records).toHaveLength(10);
    expect(await again.redriveDeadLetters({ filter: { sink: 'http' } })).toMatchObject({ matched: 10, redriven: 10, skipped: [] });
    expect(await again.flush(5000)).toBe(true);
    const ids = (receiver.delivered('/ingest') as Array<{ id: string }>).map((item) => item.id);
    expect(ids.sort()).toEqual(records.map((r) => r.item.id!).sort());
    expect(await again.countDeadLetters()).toBe(0);
    expect(again.stats().sinks.http).toMatchObject({ accepted: 10, redriven: 10, delivered: 10, deadLettered: 0 });
  } finally {
    await second.close();
    await receiver.close();
  }
}
