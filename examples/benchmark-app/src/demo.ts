/**
 * `pnpm demo`: a small Nest app. A few requests hit an `@AfterResponse()` route that defers a job,
 * two log records and a metric: the job and the metric go to the in-memory sink, the log records to
 * the app's own logger through `LoggerSink` (each with the request's `x-request-id`, the
 * `correlation` option). The demo prints when each response finished and when each item reached its
 * destination, then the library's `stats()`, and exits.
 */
import 'reflect-metadata';
import { ConsoleLogger, Controller, HttpException, Module, Param, Post, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
  LoggerSink,
  MemorySink,
  type SinkItem,
  type SinkWriteContext,
} from 'nestjs-deferred-work';

/** What the demo observes about one request. */
interface Trace {
  handlerDoneAt?: number;
  finishedAt?: number;
  flushed: Array<{ item: SinkItem; at: number }>;
}

const traces = new Map<string, Trace>();
const trace = (id: string): Trace => {
  let t = traces.get(id);
  if (!t) traces.set(id, (t = { flushed: [] }));
  return t;
};

/** The in-memory sink (what the library uses when no sink is configured), noting when each batch arrives. */
class TimedMemorySink extends MemorySink {
  override async write(batch: readonly SinkItem[], context?: SinkWriteContext): Promise<void> {
    const at = performance.now();
    for (const item of batch) {
      const id = (item.kind === 'job' ? (item.data as { orderId?: string }) : item.kind === 'log' ? item.fields : item.tags)?.orderId;
      if (typeof id === 'string') trace(id).flushed.push({ item, at });
    }
    return super.write(batch, context);
  }
}

/**
 * The app's logger (what `app.useLogger()` or `NestFactory.create(..., { logger })` sets): Nest's
 * `ConsoleLogger`, whose JSON lines for the `Orders` context the demo prints and times; Nest's own
 * start-up lines are left out to keep the output short.
 */
class AppLogger extends ConsoleLogger {
  constructor() {
    super({ json: true, logLevels: ['log', 'error', 'warn'] });
  }

  override log(message: unknown, ...rest: unknown[]): void {
    if (rest.at(-1) !== 'Orders') return;
    const fields = rest.find((r): r is Record<string, unknown> => typeof r === 'object' && r !== null) ?? {};
    const id = fields.orderId;
    if (typeof id === 'string') {
      const item: SinkItem = { kind: 'log', level: 'info', message: String(message), fields, when: 'always', createdAt: Date.now() };
      trace(id).flushed.push({ item, at: performance.now() });
    }
  }
}

/** The part of Express's response the demo uses. */
interface FinishingResponse {
  once(event: 'finish', listener: () => void): unknown;
}

@Controller('orders')
class OrdersController {
  @Post(':id')
  @AfterResponse()
  create(@Param('id') orderId: string, @Deferred() work: DeferredScope, @Res({ passthrough: true }) res: FinishingResponse) {
    res.once('finish', () => (trace(orderId).finishedAt = performance.now()));
    work.job('mail', 'order-confirmation', { orderId }); // runs on success only (default for jobs)
    work.log('info', 'order received', { orderId });
    work.log('info', 'stock reserved', { orderId });
    work.metric('orders.created', 1, { orderId });
    trace(orderId).handlerDoneAt = performance.now();
    if (orderId === 'bad') throw new HttpException('out of stock', 409); // logs and metric still flush
    return { orderId, status: 'accepted' };
  }
}

const sink = new TimedMemorySink();

@Module({
  imports: [
    DeferredWorkModule.forRoot({
      // logs to the app's logger (context "Orders"); jobs and metrics to the in-memory sink
      sinks: [sink, new LoggerSink({ context: 'Orders' })],
      routing: { log: 'logger', default: 'memory' },
      correlation: { requestIdHeader: 'x-request-id' },
    }),
  ],
  controllers: [OrdersController],
})
class DemoModule {}

const ms = (value: number): string => `${value.toFixed(1)} ms`;

function label(item: SinkItem): string {
  if (item.kind === 'job') return `job    ${item.queue}/${item.name}`;
  if (item.kind === 'log') return `log    "${item.message}" → app logger, ${String(item.fields?.requestId)}`;
  return `metric ${item.name}=${item.value}`;
}

async function main(): Promise<void> {
  const app = await NestFactory.create(DemoModule, new ExpressAdapter(), { logger: new AppLogger() });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const work = app.get(DeferredWork);
  console.log(
    `nestjs-deferred-work demo: Nest on Express at http://127.0.0.1:${port}; jobs and metrics to the in-memory sink, ` +
      `logs to the app's logger (LoggerSink) with the request id (items linger up to flushIntervalMs = 5 ms to be batched)\n`,
  );
  let inMemory = 0;

  for (const id of ['A-1', 'A-2', 'bad']) {
    const sent = performance.now();
    const response = await fetch(`http://127.0.0.1:${port}/orders/${id}`, { method: 'POST', headers: { 'x-request-id': `req-${id}` } });
    await response.text();
    const received = performance.now();
    inMemory += response.ok ? 2 : 1; // the job (on success only) and the metric; the two logs go to the app's logger
    await sink.waitFor(inMemory, 2000);
    await work.flush(2000);
    const t = trace(id);
    const finishedAt = t.finishedAt ?? received;
    console.log(
      `POST /orders/${id} -> ${response.status}: handler done ${ms((t.handlerDoneAt ?? sent) - sent)}, ` +
        `response finished ${ms(finishedAt - sent)} after the request was sent`,
    );
    for (const { item, at } of t.flushed) {
      console.log(`    ${label(item).padEnd(52)} flushed ${ms(at - finishedAt).padStart(8)} after the response`);
    }
    if (t.flushed.length < 4) console.log(`    (${4 - t.flushed.length} item(s) skipped: jobs run on success only)`);
  }

  const s = work.stats();
  console.log(
    `\nstats(): accepted ${s.accepted}, delivered ${s.delivered}, pending ${s.pending}, dropped ${s.dropped}, ` +
      `dead-lettered ${s.deadLettered}, skipped ${s.skipped}, rejected ${s.rejected}; ` +
      `requests finished ${s.requests.finished}, aborted ${s.requests.aborted}`,
  );
  await app.close();
  const early = [...traces.values()].some((t) => t.flushed.some((f) => t.finishedAt !== undefined && f.at < t.finishedAt));
  if (early) {
    console.error('Unexpected: an item was flushed before its response finished.');
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
