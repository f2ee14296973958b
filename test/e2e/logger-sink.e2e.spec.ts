import { Writable } from 'node:stream';
import { ConsoleLogger, Controller, Get, type INestApplication, type LoggerService, Param } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Logger as PinoNestLogger, LoggerModule } from 'nestjs-pino';
import {
  AfterResponse,
  Deferred,
  type DeferredLogLevel,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
  LoggerSink,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { range } from '../support/load';
import { failOnUnhandledRejection, type Platform, platforms } from '../support/platforms';
import { useRequestSpans } from '../support/request-spans';

const LEVELS: DeferredLogLevel[] = ['info', 'warn', 'error', 'debug', 'verbose', 'fatal', 'log'];
/** pino's numeric level for each item level, through nestjs-pino's Logger (log/info → info, verbose → trace). */
const PINO_LEVEL: Record<DeferredLogLevel, number> = { fatal: 60, error: 50, warn: 40, info: 30, log: 30, debug: 20, verbose: 10 };
/** Nest's ConsoleLogger level names (info → log). */
const NEST_LEVEL: Record<DeferredLogLevel, string> = { fatal: 'fatal', error: 'error', warn: 'warn', info: 'log', log: 'log', debug: 'debug', verbose: 'verbose' };
const N = 21;
/** A request span around each request (real OTel SDK): the records must carry its trace id. */
const spans = useRequestSpans();

@Controller('orders')
class OrdersController {
  @Get(':id')
  @AfterResponse()
  view(@Param('id') id: string, @Deferred() work: DeferredScope) {
    const n = Number(id);
    work.log(LEVELS[n % LEVELS.length], 'order viewed', { orderId: n, path: `/orders/${id}`, tags: ['a', 'b'] });
    return { id: n };
  }
}

/** When each response finished (`finish` on the Node response), by URL, taken at the server. */
function finishTimes(app: INestApplication): Map<string, bigint> {
  const finished = new Map<string, bigint>();
  app.getHttpServer().prependListener('request', (req: { url: string }, res: NodeJS.EventEmitter) => {
    res.on('finish', () => finished.set(req.url, process.hrtime.bigint()));
  });
  return finished;
}

interface Written {
  at: bigint;
  record: Record<string, unknown>;
}

async function startLogged(platform: Platform, imports: unknown[], useLogger: (app: INestApplication) => LoggerService) {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...(imports as never[]),
      DeferredWorkModule.forRoot({
        sinks: [new LoggerSink({ context: 'Orders' })],
        flushIntervalMs: 1,
        correlation: { requestIdHeader: 'x-request-id' },
      }),
    ],
    controllers: [OrdersController],
  }).compile();
  const app = moduleRef.createNestApplication(platform.adapter() as never, { bufferLogs: true });
  app.useLogger(useLogger(app));
  spans.install(platform, app);
  const finished = finishTimes(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, finished, url: `http://127.0.0.1:${port}` };
}

async function requestAll(url: string): Promise<void> {
  for (const i of range(0, N)) {
    const res = await fetch(`${url}/orders/${i}`, { headers: { 'x-request-id': `req-${i}` } });
    expect(await res.json()).toEqual({ id: i });
  }
}

/**
 * Where pino writes, as JSON lines. One stream for the file: nestjs-pino keeps its root logger in a
 * module-level variable, built by the first app (the next apps reuse it).
 */
let pinoWritten: Written[] = [];
const stream = new Writable({
  write(chunk: Buffer, _encoding, callback) {
    const at = process.hrtime.bigint();
    for (const line of chunk.toString().split('\n').filter(Boolean)) pinoWritten.push({ at, record: JSON.parse(line) });
    callback();
  },
});

describe.each(platforms)('LoggerSink on $name', (platform) => {
  failOnUnhandledRejection();

  it('nestjs-pino: N requests → N JSON records with the mapped level, the fields as JSON fields, the context, the request id and trace id, written after each response finished', async () => {
    const written: Written[] = (pinoWritten = []);
    const { app, finished, url } = await startLogged(
      platform,
      [LoggerModule.forRoot({ pinoHttp: [{ level: 'trace', autoLogging: false }, stream] })],
      (created) => created.get(PinoNestLogger),
    );
    try {
      await requestAll(url);
      const records = await eventually(() => {
        const ours = written.filter((w) => w.record.context === 'Orders');
        expect(ours).toHaveLength(N);
        return ours;
      });
      for (const { at, record } of records) {
        const id = record.orderId as number;
        expect(record).toMatchObject({
          level: PINO_LEVEL[LEVELS[id % LEVELS.length]],
          msg: 'order viewed',
          context: 'Orders',
          orderId: id, // a JSON field (a number), not part of a stringified message
          path: `/orders/${id}`,
          tags: ['a', 'b'],
          requestId: `req-${id}`, // the correlation option: the request's id and its span's trace id
        });
        const span = spans.exporter.getFinishedSpans().find((s) => s.name === `GET /orders/${id}`)!.spanContext();
        expect(record).toMatchObject({ traceId: span.traceId, spanId: span.spanId });
        expect(at).toBeGreaterThan(finished.get(`/orders/${id}`)!);
      }
      expect(records.map((r) => r.record.orderId).sort((a, b) => Number(a) - Number(b))).toEqual(range(0, N));
      expect(app.get(DeferredWork).stats().sinks.logger).toMatchObject({ delivered: N, failedWrites: 0, deadLettered: 0 });
    } finally {
      await app.close();
    }
  });

  it("Nest's ConsoleLogger in JSON mode: N requests → N one-line JSON records with the fields as params and the context, after each response", async () => {
    const written: Written[] = [];
    const original = process.stdout.write.bind(process.stdout);
    const originalErr = process.stderr.write.bind(process.stderr);
    const capture = (passOn: typeof original) =>
      ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        const text = String(chunk);
        if (text.includes('"context":"Orders"')) {
          const at = process.hrtime.bigint();
          for (const line of text.split('\n').filter(Boolean)) written.push({ at, record: JSON.parse(line) });
          return true;
        }
        return (passOn as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof process.stdout.write;
    process.stdout.write = capture(original);
    process.stderr.write = capture(originalErr);
    const { app, finished, url } = await startLogged(platform, [], () => new ConsoleLogger({ json: true, logLevels: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] }));
    try {
      await requestAll(url);
      const records = await eventually(() => {
        expect(written).toHaveLength(N);
        return written;
      });
      for (const { at, record } of records) {
        const id = (record.params as { orderId: number }).orderId;
        expect(record).toEqual({
          level: NEST_LEVEL[LEVELS[id % LEVELS.length]],
          pid: process.pid,
          timestamp: expect.any(Number),
          message: 'order viewed',
          context: 'Orders',
          params: { orderId: id, path: `/orders/${id}`, tags: ['a', 'b'], requestId: `req-${id}`, traceId: expect.any(String), spanId: expect.any(String) },
        });
        const span = spans.exporter.getFinishedSpans().find((s) => s.name === `GET /orders/${id}`)!.spanContext();
        expect(record.params).toMatchObject({ traceId: span.traceId, spanId: span.spanId });
        expect(at).toBeGreaterThan(finished.get(`/orders/${id}`)!);
      }
    } finally {
      process.stdout.write = original;
      process.stderr.write = originalErr;
      await app.close();
    }
  });

  it('a logger that throws fails its records (counted, dead-lettered), never the response nor the process', async () => {
    const throwing: LoggerService = {
      log: (message: unknown) => {
        if ((message as { message?: unknown })?.message === 'order viewed') throw new Error('log transport down'); // one object: the 'object' style
      },
      error: () => undefined,
      warn: () => undefined,
    };
    const { app, url } = await startLogged(platform, [], () => throwing);
    try {
      for (const i of [0, 6]) expect((await fetch(`${url}/orders/${i}`)).status).toBe(200); // info and log → log(): throws
      const work = app.get(DeferredWork);
      // one write or two, as the two requests' records happen to batch
      await eventually(() => expect(work.stats().sinks.logger).toMatchObject({ accepted: 2, delivered: 0, deadLettered: 2, failedWrites: expect.any(Number) }));
      expect(work.stats().sinks.logger.failedWrites).toBeGreaterThanOrEqual(1);
      expect(work.deadLetters().map((d) => [d.reason, d.error])).toEqual([
        ['not-retryable', expect.stringMatching(/log transport down/)],
        ['not-retryable', expect.stringMatching(/log transport down/)],
      ]);
    } finally {
      await app.close();
    }
  });
});
