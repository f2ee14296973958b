import { Controller, Get, Injectable, type LoggerService, Param } from '@nestjs/common';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  type LogItem,
  LoggerSink,
  MemorySink,
  type SinkItem,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from '../support/platforms';
import { useRequestSpans } from '../support/request-spans';

/**
 * Request and trace ids on every deferred item (the `correlation` option), with the real
 * OpenTelemetry SDK: a tracer provider with an in-memory exporter and the AsyncLocalStorage context
 * manager, registered globally as an app's tracing setup does, and a request span started around
 * each request (what the HTTP instrumentation does) by a middleware of the app.
 */
const { exporter, tracer, install } = useRequestSpans();

@Controller()
class OrdersController {
  @Get('order/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.job('mail', 'confirm', { id });
    work.log('info', 'order placed', { id });
    work.metric('orders', 1, { id });
    work.run(async () => {
      // a span started by a callback joins the request's trace
      tracer.startActiveSpan(`callback ${id}`, (span) => span.end());
    });
    return { id };
  }
}

/** A LoggerService that keeps what it is given (the app's logger, as LoggerSink sees it). */
@Injectable()
class KeepingLogger implements LoggerService {
  readonly records: Array<{ fields: Record<string, unknown>; message: unknown }> = [];
  log(fields: Record<string, unknown>, message: unknown): void {
    this.records.push({ fields, message });
  }
  error(): void {}
  warn(): void {}
}

failOnUnhandledRejection();

describe.each(platforms)('correlation on $name', (platform: Platform) => {
  let started: StartedApp | undefined;
  let memory: MemorySink;
  let logger: KeepingLogger;

  afterEach(async () => {
    await started?.close();
    started = undefined;
  });

  /** Starts the app; with `spans`, each request runs inside its own request span. */
  async function setup(options: DeferredWorkModuleOptions = {}, spans = false) {
    memory = new MemorySink({ name: 'memory', capacity: 10_000 });
    logger = new KeepingLogger();
    started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          flushIntervalMs: 2,
          sinks: [memory, new LoggerSink({ logger, fieldsStyle: 'fields-first' })],
          routing: { job: 'memory', metric: 'memory', log: 'logger' },
          ...options,
        }),
      ],
      controllers: [OrdersController],
    }, spans ? (app) => install(platform, app) : undefined);
    return started.app.get(DeferredWork);
  }

  it('carries each request id from its header, with no cross-talk between 200 concurrent requests', async () => {
    const work = await setup({ correlation: { requestIdHeader: 'X-Request-Id', openTelemetry: false } });
    const ids = range(0, 200).map(String);
    await Promise.all(
      ids.map((id) => fetch(`${started!.url}/order/${id}`, { headers: { 'x-request-id': `req-${id}` } }).then((r) => r.arrayBuffer())),
    );
    expect(await work.flush(10_000)).toBe(true);
    const items = memory.items as SinkItem[];
    expect(items).toHaveLength(400);
    for (const item of items) {
      const id = item.kind === 'job' ? (item.data as { id: string }).id : item.kind === 'metric' ? item.tags!.id : undefined;
      expect(item.correlation).toEqual({ requestId: `req-${id}` });
    }
    expect(logger.records).toHaveLength(200);
    for (const record of logger.records) expect(record.fields.requestId).toBe(`req-${record.fields.id}`);
  });

  it('carries the trace and span ids of the request span, and runs run(fn) callbacks inside its trace', async () => {
    const work = await setup({}, true);
    const ids = range(0, 50).map(String);
    expect(await load(started!.url, ids.map((id) => `/order/${id}`), 10)).toEqual(ids.map(() => 200));
    expect(await work.flush(10_000)).toBe(true);
    await eventually(() => expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith('callback'))).toHaveLength(50));
    const spans = exporter.getFinishedSpans();
    const requestSpan = (id: string) => spans.find((s) => s.name === `GET /order/${id}`)!;
    for (const id of ids) {
      const request = requestSpan(id).spanContext();
      const items = (memory.items as SinkItem[]).filter((i) => (i.kind === 'job' ? (i.data as { id: string }).id : i.kind === 'metric' ? i.tags!.id : undefined) === id);
      expect(items).toHaveLength(2);
      // Fastify gives every request an id (req.id), which is the default request id; Express has none without pino-http.
      const requestId = platform.name === 'fastify' ? { requestId: expect.stringMatching(/^req-/) } : {};
      for (const item of items) expect(item.correlation).toEqual({ ...requestId, traceId: request.traceId, spanId: request.spanId, traceFlags: 1 });
      const record = logger.records.find((r) => r.fields.id === id)!;
      expect(record.fields).toMatchObject({ traceId: request.traceId, spanId: request.spanId });
      const callback = spans.find((s) => s.name === `callback ${id}`)!;
      expect(callback.spanContext().traceId).toBe(request.traceId);
      expect(callback.parentSpanContext?.spanId).toBe(request.spanId);
    }
  });

  it('outside a request, items carry the span active where they were deferred', async () => {
    const work = await setup();
    const traceId = tracer.startActiveSpan('cron tick', (span) => {
      work.metric('ticks', 1);
      span.end();
      return span.spanContext().traceId;
    });
    expect(await work.flush(5000)).toBe(true);
    expect((memory.items as SinkItem[])[0].correlation).toMatchObject({ traceId });
  });

  it('adds nothing with correlation: false, even under an active span', async () => {
    const work = await setup({ correlation: false }, true);
    await load(started!.url, ['/order/1'], 1);
    expect(await work.flush(5000)).toBe(true);
    expect((memory.items as SinkItem[]).map((i) => i.correlation)).toEqual([undefined, undefined]);
    expect((logger.records[0].fields as Partial<LogItem>).correlation).toBeUndefined();
    expect(logger.records[0].fields.traceId).toBeUndefined();
  });
});
