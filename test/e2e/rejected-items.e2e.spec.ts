import { Body, Controller, type INestApplication, type LoggerService, Module, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  AfterResponse,
  Deferred,
  DeferredLogger,
  type DeferredQueue,
  DeferredWork,
  DeferredWorkModule,
  InjectDeferredQueue,
  MemorySink,
} from 'nestjs-deferred-work';
import { failOnUnhandledRejection, type Platform, platforms } from '../support/platforms';

/**
 * Hostile input through the deferred handles: a payload with a cycle or a BigInt cannot be serialised.
 * The response is what the handler returned; the item is refused after it, counted in
 * `stats().rejected` and logged — the message of a `DeferredItemRejectedError`, naming the handler that
 * deferred it; the request's other items are delivered.
 */

@Controller('orders')
@AfterResponse()
class OrdersController {
  constructor(@InjectDeferredQueue('mail') private readonly mail: DeferredQueue) {}

  /** An injected queue handle given data with a cycle (an ORM entity and its relation, say). */
  @Post(':id/cycle')
  async cycle(@Param('id') id: string) {
    const order: Record<string, unknown> = { id };
    order.customer = { orders: [order] };
    await this.mail.add('confirm', order, { when: 'always' });
    await this.mail.add('receipt', { id }, { when: 'always' });
    return { id, ok: true };
  }

  /** A logger handle as a parameter, given a BigInt among the record's fields. */
  @Post(':id/bigint')
  bigint(@Param('id') id: string, @Body() body: { cents: string }, @Deferred.logger('Orders') logger: DeferredLogger) {
    logger.log('order total', { id, cents: BigInt(body.cents) });
    logger.log('order seen', { id });
    return { id, ok: true };
  }
}

/** Nest's log lines, as a test app's logger receives them. */
class RecordingLogger implements LoggerService {
  readonly warnings: Array<{ message: string; context: unknown }> = [];
  log(): void {}
  error(): void {}
  warn(message: unknown, context?: unknown): void {
    this.warnings.push({ message: String(message), context });
  }
}

describe.each(platforms)('a handle given a payload that cannot be serialised ($name)', (platform: Platform) => {
  failOnUnhandledRejection();
  let app: INestApplication;
  let url: string;
  let sink: MemorySink;
  let logger: RecordingLogger;

  beforeEach(async () => {
    sink = new MemorySink();
    logger = new RecordingLogger();
    @Module({ imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1 })], controllers: [OrdersController] })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication(platform.adapter() as never, { logger });
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    url = `http://127.0.0.1:${port}`;
  });
  afterEach(() => app.close());

  const rejections = () => logger.warnings.filter((w) => w.message.startsWith('DeferredWork rejected'));

  it('a cycle: the response is unaffected; the job is rejected, counted and logged with its handler; the other job is delivered', async () => {
    const res = await fetch(`${url}/orders/A-1/cycle`, { method: 'POST' });
    expect([res.status, await res.json()]).toEqual([201, { id: 'A-1', ok: true }]);

    const work = app.get(DeferredWork);
    expect(await work.settled(5000)).toBe(true);
    expect(work.stats()).toMatchObject({ rejected: 1, accepted: 1, delivered: 1, dropped: 0, deadLettered: 0 });
    expect(sink.items).toMatchObject([{ kind: 'job', queue: 'mail', name: 'receipt', data: { id: 'A-1' } }]);
    expect(rejections()).toEqual([
      {
        context: 'DeferredWork',
        message: expect.stringMatching(
          /^DeferredWork rejected job "confirm" on queue "mail" \(deferred in OrdersController\.cycle\(\)\): its data cannot be serialised to JSON \(.*circular.*\)\. Pass plain data/i,
        ),
      },
    ]);
  });

  it('a BigInt: the response is unaffected; the record is rejected, counted and logged with its handler; the other record is written', async () => {
    const res = await fetch(`${url}/orders/B-2/bigint`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cents: '12345' }) });
    expect([res.status, await res.json()]).toEqual([201, { id: 'B-2', ok: true }]);

    const work = app.get(DeferredWork);
    expect(await work.settled(5000)).toBe(true);
    expect(work.stats()).toMatchObject({ rejected: 1, accepted: 1, delivered: 1 });
    expect(sink.items).toMatchObject([{ kind: 'log', message: 'order seen', fields: { id: 'B-2' }, context: 'Orders' }]);
    const [warning] = rejections();
    expect(warning.message).toMatch(
      /^DeferredWork rejected log record "order total" \(deferred in OrdersController\.bigint\(\)\): its fields cannot be serialised to JSON \(.*BigInt.*\)\. Pass plain data: .*convert it to a string/,
    );
    expect(rejections()).toHaveLength(1);
  });
});
