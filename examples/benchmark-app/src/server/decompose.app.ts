/**
 * The server of `dist/bench/decompose.js`: one route per step of what a deferred route
 * adds to a plain one, so that the request thread's CPU per request can be split step by step —
 * a parameter at all, the `@Deferred()` scope with nothing deferred, a no-op `run(fn)`, a `run(fn)`
 * that waits 5 ms on a timer (the `sim5` scenario) — next to the same 5 ms effect started by
 * `@nestjs/event-emitter`, by a bare `setImmediate` and by a hand-written `close` listener (and the
 * realistic route's three items deferred, from an emitter listener and from a hand-written listener).
 * Listens on 127.0.0.1 (random port), prints `{"port":…}` on stdout; `GET /__cpu` answers the main
 * thread's CPU time (µs, Linux schedstat) and the effects completed. With a second argument `metrics`,
 * the library's own metrics are on (`DeferredWorkMetricsModule` in a prom-client registry, default
 * options), served on `GET /metrics`; with `metrics-lag`, the same with the opt-in delivery lag.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Get, Inject, Injectable, Module, Req, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventEmitter2, EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { AfterResponse, Deferred, type DeferredScope, DeferredWorkModule, MemorySink, type SinkItem } from 'nestjs-deferred-work';
import { DeferredWorkMetricsModule } from 'nestjs-deferred-work/metrics';
import { Registry } from 'prom-client';
import { MEMORY_CAPACITY } from '../bench/args.js';

const OK = { ok: true } as const;
const registry = new Registry();
const withMetrics = process.argv[3] === 'metrics' || process.argv[3] === 'metrics-lag';
const deliveryLag = process.argv[3] === 'metrics-lag';
let done = 0;
const effect = async (): Promise<void> => {
  await sleep(5);
  done++;
};

@Injectable()
class EffectListener {
  @OnEvent('decompose.effect', { async: true })
  async handle(): Promise<void> {
    await effect();
  }
}

const ORDER = { id: 'o-1', total: 42.5, lines: [{ sku: 'a', qty: 1 }, { sku: 'b', qty: 2 }] };
const FIELDS = { orderId: 'o-1', user: 'u-1' };
const TAGS = { route: 'orders', status: '200' };
const direct = new MemorySink({ name: 'emitter-memory', capacity: MEMORY_CAPACITY });
const writeSignal = new AbortController().signal;
const write = (item: SinkItem) => direct.write([item], { signal: writeSignal, attempt: 1 });
/** What every item the listeners write carries besides its own fields. */
const base = () => ({ when: 'always' as const, createdAt: Date.now() });

@Injectable()
class MixListener {
  @OnEvent('decompose.mix', { async: true })
  async handle(): Promise<void> {
    await write({ kind: 'job', queue: 'orders', name: 'confirm', data: ORDER, ...base() });
    await write({ kind: 'log', level: 'info', message: 'order accepted', fields: FIELDS, ...base() });
    await write({ kind: 'log', level: 'debug', message: 'stock reserved', fields: FIELDS, ...base() });
    await write({ kind: 'metric', name: 'orders.created', value: 1, tags: TAGS, ...base() });
    await write({ kind: 'metric', name: 'orders.value', value: ORDER.total, tags: TAGS, ...base() });
    done++;
  }

  /** The realistic route's three effects (a job, a log record, a metric point), each awaited on a memory sink. */
  @OnEvent('decompose.three', { async: true })
  async three(): Promise<void> {
    await writeThree();
  }
}

/** The three writes of `emit-three` and `close-three`: a job, a log record, a metric point, each awaited on a memory sink. */
async function writeThree(): Promise<void> {
  await write({ kind: 'job', queue: 'orders', name: 'confirm', data: ORDER, ...base() });
  await write({ kind: 'log', level: 'info', message: 'order accepted', fields: FIELDS, ...base() });
  await write({ kind: 'metric', name: 'orders.created', value: 1, tags: TAGS, ...base() });
  done++;
}

/** Express's response, or Fastify's reply holding the Node response as `raw`. */
type Reply = { raw?: NodeJS.EventEmitter } & NodeJS.EventEmitter;

/** A hand-written after-response: runs `work` once, from one `close` listener on the Node response. */
function onClose(response: Reply, work: () => Promise<void>): void {
  (response.raw ?? response).once('close', () => void work());
}

@Controller()
class DecomposeController {
  constructor(@Inject(EventEmitter2) private readonly emitter: EventEmitter2) {}

  @Get('plain')
  plain() {
    return OK;
  }

  /** A parameter decorator of Nest's own: what any route with a parameter pays. */
  @Get('param')
  param(@Req() _request: unknown) {
    return OK;
  }

  /** The scope is opened (collector, `close` listener, settling), nothing is deferred. */
  @Get('scope')
  @AfterResponse()
  scope(@Deferred() _work: DeferredScope) {
    return OK;
  }

  @Get('run-noop')
  @AfterResponse()
  runNoop(@Deferred() work: DeferredScope) {
    work.run(() => {
      done++;
    });
    return OK;
  }

  @Get('run-timer')
  @AfterResponse()
  runTimer(@Deferred() work: DeferredScope) {
    work.run(effect);
    return OK;
  }

  /** One job to the memory sink: through a sink's queue and its batched writes (what the metrics' write observer sees). */
  @Get('job')
  @AfterResponse()
  job(@Deferred() work: DeferredScope) {
    work.job('decompose', 'effect', OK);
    return OK;
  }

  /** `mix`'s five items (a job, two log records, two metric points) to the memory sink. */
  @Get('mix')
  @AfterResponse()
  mix(@Deferred() work: DeferredScope) {
    work.job('orders', 'confirm', ORDER);
    work.log('info', 'order accepted', FIELDS);
    work.log('debug', 'stock reserved', FIELDS);
    work.metric('orders.created', 1, TAGS);
    work.metric('orders.value', ORDER.total, TAGS);
    return OK;
  }

  /** The same five writes by an event-emitter listener, each awaited on a memory sink (`mix`'s emitter route). */
  @Get('emit-mix')
  emitMix() {
    this.emitter.emit('decompose.mix', OK);
    return OK;
  }

  /** Three items — a job, a log record, a metric point, as on the realistic route — to the memory sink. */
  @Get('three')
  @AfterResponse()
  three(@Deferred() work: DeferredScope) {
    work.job('orders', 'confirm', ORDER);
    work.log('info', 'order accepted', FIELDS);
    work.metric('orders.created', 1, TAGS);
    return OK;
  }

  /** The same three writes by an event-emitter listener, each awaited on a memory sink (`three`'s emitter route). */
  @Get('emit-three')
  emitThree() {
    this.emitter.emit('decompose.three', OK);
    return OK;
  }

  @Get('emit-timer')
  emitTimer() {
    this.emitter.emit('decompose.effect', OK);
    return OK;
  }

  /** The least a fire-and-forget can do: no outcome, no accounting, no timeout, starts before the response. */
  @Get('immediate-timer')
  immediateTimer() {
    setImmediate(() => void effect());
    return OK;
  }

  /** A hand-written after-response: one `close` listener on the Node response, nothing else. */
  @Get('close-timer')
  closeTimer(@Res({ passthrough: true }) response: Reply) {
    onClose(response, effect);
    return OK;
  }

  /** The same three writes from a hand-written `close` listener on the Node response: the least an after-response route does for them. */
  @Get('close-three')
  closeThree(@Res({ passthrough: true }) response: Reply) {
    onClose(response, writeThree);
    return OK;
  }

  @Get('metrics')
  metrics() {
    return registry.metrics();
  }

  @Get('__cpu')
  cpu() {
    return { mainCpuUs: Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ', 1)[0]) / 1e3, done };
  }
}

@Module({
  imports: [
    EventEmitterModule.forRoot(),
    // as many items kept as the listeners' memory sink: the default sink keeps 10,000, held through more collections
    DeferredWorkModule.forRoot({ sinks: [new MemorySink({ capacity: MEMORY_CAPACITY })] }),
    ...(withMetrics ? [DeferredWorkMetricsModule.forRoot({ prometheus: { registry }, deliveryLag })] : []),
  ],
  controllers: [DecomposeController],
  providers: [EffectListener, MixListener],
})
class DecomposeModule {}

async function main(): Promise<void> {
  const adapter = process.argv[2] === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const app = await NestFactory.create(DecomposeModule, adapter, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  console.log(JSON.stringify({ port: (app.getHttpServer().address() as { port: number }).port }));
}

if (process.argv[1]?.endsWith('decompose.app.js')) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
