import { Body, Controller, Get, Injectable, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AfterResponse } from '../nest/after-response.decorator';
import { Deferred } from '../nest/deferred.decorator';
import { DeferredMetrics } from '../nest/handles/deferred-metrics.service';
import type { DeferredPinoLogger } from '../nest/handles/deferred-pino-logger';
import { InjectDeferredClient, InjectDeferredMetric, InjectDeferredPinoLogger, InjectDeferredQueue } from '../nest/handles/inject-handles';
import type { DeferredMetricHandle } from '../nest/handles/deferred-metric.handle';
import type { DeferredClient, DeferredQueue } from '../nest/handles/handle-types';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import { DeferredHandleDoubles } from './handle-doubles';

@Injectable()
class MailService {
  constructor(
    @InjectDeferredQueue('mail') private readonly mail: { add(name: string, data: unknown, opts?: object): Promise<{ id: string }> },
    @InjectDeferredClient('EVENTS') private readonly events: { emit(pattern: string, data: unknown): unknown },
    @InjectDeferredMetric('welcomes') private readonly welcomes: DeferredMetricHandle,
  ) {}

  async welcome(user: string): Promise<string> {
    const job = await this.mail.add('welcome', { user }, { attempts: 3 });
    this.events.emit('user.welcomed', { user });
    this.welcomes.inc({ channel: 'web' });
    return job.id;
  }
}

/** A controller as an app writes one: routes with and without `@Deferred()`, handles injected and as parameters. */
@Controller('orders')
class OrdersController {
  private readonly placed: ReturnType<DeferredMetrics['getCounter']>;

  constructor(
    @InjectDeferredQueue('mail') private readonly mail: DeferredQueue,
    @InjectDeferredClient('EVENTS') private readonly events: DeferredClient,
    @InjectDeferredPinoLogger('Orders') private readonly audit: DeferredPinoLogger,
    metrics: DeferredMetrics,
  ) {
    this.placed = metrics.getCounter('orders_placed');
  }

  /** No `@Deferred()` parameter: `@AfterResponse()` binds DeferredWorkInterceptor here. */
  @Post()
  @AfterResponse()
  async create(@Body() body: { id: string }) {
    await this.mail.add('confirm', { orderId: body.id }, { when: 'always', attempts: 3 });
    this.events.emit('order.placed', { orderId: body.id }, { jobId: `placed-${body.id}` });
    this.audit.info({ orderId: body.id }, 'order placed');
    this.placed.add(1, { channel: 'web' });
    return { id: body.id };
  }

  @Post(':id/cancel')
  @AfterResponse()
  cancel(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'cancelled', { orderId: id }, { when: 'success', sink: 'bullmq' });
    work.log('warn', 'order cancelled', { orderId: id });
    work.run(async () => undefined, { when: 'always' });
    return { id };
  }

  @Get(':id')
  @AfterResponse()
  async show(@Param('id') id: string, @Deferred.queue('mail') mail: DeferredQueue, @Deferred.metric('views') views: DeferredMetricHandle) {
    await mail.add('viewed', { orderId: id });
    views.inc();
    return { id };
  }
}

describe('DeferredHandleDoubles', () => {
  it('stand in for the handles in a unit test, without DeferredWorkModule, and record the calls', async () => {
    const doubles = new DeferredHandleDoubles();
    const moduleRef = await Test.createTestingModule({
      providers: [MailService, ...doubles.providers({ queues: ['mail'], clients: ['EVENTS'], metrics: ['welcomes'] })],
    }).compile();
    const id = await moduleRef.get(MailService).welcome('u1');
    expect(doubles.jobs).toEqual([
      { kind: 'job', id, queue: 'mail', name: 'welcome', data: { user: 'u1' }, opts: { attempts: 3 } },
      expect.objectContaining({ queue: 'EVENTS', name: 'user.welcomed', data: { user: 'u1' }, opts: { sink: 'EVENTS' } }),
    ]);
    expect(doubles.metrics).toEqual([expect.objectContaining({ name: 'welcomes', value: 1, tags: { channel: 'web' } })]);
    doubles.logger('Ctx').log('hello', { a: 1 });
    expect(doubles.logs).toEqual([expect.objectContaining({ level: 'log', message: 'hello', fields: { a: 1 }, opts: { context: 'Ctx' } })]);
  });

  it('make a controller with @AfterResponse() routes compile with no override, and record each call with its options', async () => {
    const doubles = new DeferredHandleDoubles();
    // No names given: every name the loaded code's decorators asked for is provided.
    const moduleRef = await Test.createTestingModule({ controllers: [OrdersController], providers: doubles.providers() }).compile();
    const controller = moduleRef.get(OrdersController);

    expect(await controller.create({ id: 'A-1' })).toEqual({ id: 'A-1' });
    expect(doubles.jobs).toMatchObject([
      { queue: 'mail', name: 'confirm', data: { orderId: 'A-1' }, opts: { when: 'always', attempts: 3 } },
      { queue: 'EVENTS', name: 'order.placed', opts: { jobId: 'placed-A-1', sink: 'EVENTS' } },
    ]);
    expect(doubles.logs).toMatchObject([{ level: 'info', message: 'order placed', fields: { orderId: 'A-1' }, opts: { context: 'Orders' } }]);
    expect(doubles.metrics).toMatchObject([{ name: 'orders_placed', value: 1, tags: { channel: 'web' } }]);

    doubles.clear();
    controller.cancel('A-1', doubles.scope);
    expect(doubles.calls).toMatchObject([
      { kind: 'job', queue: 'mail', name: 'cancelled', opts: { when: 'success', sink: 'bullmq' } },
      { kind: 'log', level: 'warn', message: 'order cancelled', opts: undefined },
      { kind: 'callback', opts: { when: 'always' } },
    ]);
    await expect(doubles.callbacks[0].fn(new AbortController().signal)).resolves.toBeUndefined();

    doubles.clear();
    await controller.show('A-1', doubles.queue('mail'), doubles.metric('views'));
    expect(doubles.calls).toMatchObject([
      { kind: 'job', queue: 'mail', name: 'viewed', opts: undefined },
      { kind: 'metric', name: 'views', value: 1 },
    ]);
  });

  it('let the app built from such a module serve the routes: the interceptor passes every request through', async () => {
    const doubles = new DeferredHandleDoubles();
    const moduleRef = await Test.createTestingModule({ controllers: [OrdersController], providers: doubles.providers() }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const { port } = app.getHttpServer().address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'B-2' }),
      });
      expect([res.status, await res.json()]).toEqual([201, { id: 'B-2' }]);
      expect(doubles.jobs.map((job) => job.name)).toEqual(['confirm', 'order.placed']);
    } finally {
      await app.close();
    }
  });
});

@Controller('audit')
class AuditController {
  @Post()
  @AfterResponse()
  record() {
    return { ok: true };
  }
}

describe('an app that forgot DeferredWorkModule', () => {
  it('still fails at bootstrap: the interceptor @AfterResponse() binds cannot be built without it', async () => {
    await expect(Test.createTestingModule({ controllers: [AuditController] }).compile()).rejects.toThrow(
      /DeferredWorkInterceptor[\s\S]*ScopeOpener at index \[0\]/,
    );
    await expect(Test.createTestingModule({ controllers: [AuditController], providers: new DeferredHandleDoubles().providers() }).compile()).resolves.toBeDefined();
  });
});
