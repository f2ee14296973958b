/**
 * The benchmark app: for each scenario, six routes doing the same side-effect six ways
 * (`GET /<scenario>/<variant>`, see `scenario.controller.ts`), plus the undecorated
 * `GET /__bench/stats` the runner reads.
 */
import { readFileSync } from 'node:fs';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Controller, type DynamicModule, Get, Inject, Module, Query, type Type } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { offloadSinkName } from '../bench/args.js';
import type { ServerConfig, ServerSnapshot } from '../bench/types.js';
import { CompressionController } from './compression.js';
import { effectsDone, effectsInFlight, handled, routeKey, totalInFlight, unhandled } from './counters.js';
import { effectListener } from './effect.listener.js';
import type { ScenarioResources } from './effects.js';
import { NoopInterceptor } from './noop.interceptor.js';
import { offloadController, packedController, scenarioController, spoolController } from './scenario.controller.js';
import { handleController, injectedController } from './handles.controller.js';
import { realisticController } from './realistic.controller.js';

/** How long `?flush=1` waits, at most, for deferred items and awaited side-effects still running. */
const FLUSH_TIMEOUT_MS = 15_000;

/**
 * One write is in flight per sink, so a sink delivers at most `maxBatchSize` items per write latency:
 * with the defaults (512) and a 25–30 ms write that is about 20,000 items/s, which Fastify exceeds on
 * the Redis-behind-a-proxy scenarios (the queue fills and items are dropped, and counted). Those
 * sinks (Bull and BullMQ alike) therefore get bigger batches and room for one more batch's worth of
 * backlog, as an app expecting that load would configure it — their offloaded twins (the
 * `deferred-offload` routes) too: the dispatcher and its one write in flight stay on the
 * request thread, only the write runs in the worker. `run(fn)` callbacks use the library's
 * defaults: they must absorb a slow tail (`sim25`, `sim5-tail`) without tuning.
 */
const HIGH_LATENCY = { maxBatchSize: 2048, maxQueueSize: 8192 };
const HIGH_LATENCY_SINK_OPTIONS: Record<string, { maxBatchSize: number; maxQueueSize: number }> = {
  'bull-proxy': HIGH_LATENCY,
  'bullmq-proxy': HIGH_LATENCY,
  [offloadSinkName('bull-proxy')]: HIGH_LATENCY,
  [offloadSinkName('bullmq-proxy')]: HIGH_LATENCY,
  // RabbitMQ with publisher confirms on the same two cores as the server: a batch of 256 took
  // 40+ ms under load, below Fastify's request rate (items were dropped, and counted, at the defaults)
  rabbitmq: HIGH_LATENCY,
};

/** This (main) thread's own CPU time in ms, from Linux's `/proc/thread-self/schedstat`; `undefined` elsewhere. */
function mainThreadCpuMs(): number | undefined {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ', 1)[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** The event loop's delay, sampled every 2 ms over the server's life; read and reset by each stats snapshot. */
const loopDelay = monitorEventLoopDelay({ resolution: 2 });
loopDelay.enable();

/** The loop delay since the last call (its p99 and max, ms), then a fresh histogram. */
function takeLoopDelay(): { p99Ms: number; maxMs: number } {
  const taken = { p99Ms: loopDelay.percentile(99) / 1e6, maxMs: loopDelay.max / 1e6 };
  loopDelay.reset();
  return taken;
}

/** Garbage-collection pauses since the last snapshot: how many, their total and the longest (ms). */
let gcPauses = { count: 0, totalMs: 0, maxMs: 0, majorCount: 0, majorMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcPauses.count++;
    gcPauses.totalMs += entry.duration;
    if (entry.duration > gcPauses.maxMs) gcPauses.maxMs = entry.duration;
    if (((entry as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      gcPauses.majorCount++;
      gcPauses.majorMs += entry.duration;
    }
  }
}).observe({ entryTypes: ['gc'] });

/** The pauses since the last call, then a fresh count. */
function takeGcPauses(): { count: number; totalMs: number; maxMs: number; majorCount: number; majorMs: number } {
  const taken = gcPauses;
  gcPauses = { count: 0, totalMs: 0, maxMs: 0, majorCount: 0, majorMs: 0 };
  return taken;
}

@Controller('__bench')
class StatsController {
  constructor(@Inject(DeferredWork) private readonly work: DeferredWork) {}

  /**
   * Server CPU, counters and `stats()`; with `?flush=1`, after draining what is pending (deferred
   * items, and side-effects still awaited by blocking handlers, `tap`s and event listeners), bounded in time.
   */
  @Get('stats')
  async stats(@Query('flush') flush?: string): Promise<ServerSnapshot> {
    let flushed: boolean | undefined;
    if (flush) {
      const deadline = Date.now() + FLUSH_TIMEOUT_MS;
      // listeners registered with `async: true` start on a later tick
      await new Promise((r) => setImmediate(r));
      while (totalInFlight() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      flushed = (await this.work.flush(Math.max(1, deadline - Date.now()))) && totalInFlight() === 0;
    }
    const s = this.work.stats();
    return {
      cpu: process.cpuUsage(),
      rssBytes: process.memoryUsage.rss(),
      handled: { ...handled },
      routes: Object.fromEntries(
        Object.entries(s.routes ?? {}).map(([route, t]) => [route, { count: t.count, handlerMsAvg: t.handlerMsAvg, sendMsAvg: t.sendMsAvg }]),
      ),
      effectsDone: { ...effectsDone },
      effectsInFlight: { ...effectsInFlight },
      unhandledRejections: unhandled.rejections,
      mainThreadCpuMs: mainThreadCpuMs(),
      writes: Object.fromEntries(Object.entries(s.sinks ?? {}).map(([name, sink]) => [name, sink.writes])),
      workerActiveMs: Object.values(s.sinks ?? {}).reduce((total, sink) => total + (sink.host?.cpuMs ?? sink.host?.activeMs ?? 0), 0),
      spool: Object.fromEntries(
        Object.entries(s.sinks ?? {}).flatMap(([name, sink]) =>
          sink.spool
            ? [
                [
                  name,
                  {
                    fsyncs: sink.spool.fsyncs,
                    syncErrors: sink.spool.syncErrors,
                    appended: sink.spool.appended,
                    acked: sink.spool.acked,
                    pending: sink.spool.pending,
                    refused: sink.spool.refused,
                    failed: sink.spool.failed,
                  },
                ],
              ]
            : [],
        ),
      ),
      deferred: {
        accepted: s.accepted,
        delivered: s.delivered,
        pending: s.pending,
        dropped: s.dropped,
        deadLettered: s.deadLettered,
        rejected: s.rejected,
        skipped: s.skipped,
        requests: s.requests,
      },
      flushed,
      loopDelay: takeLoopDelay(),
      gc: takeGcPauses(),
    };
  }
}

/**
 * `sinkOptions`, only for sinks this server has (an unknown sink name fails the bootstrap): the
 * high-latency sinks' batch and queue sizes, and, on a server with a spool, `spool: false` for every
 * sink but the spooled twins.
 */
function sinkOptions(config: ServerConfig, resources: ScenarioResources): Record<string, { maxBatchSize?: number; maxQueueSize?: number; spool?: false }> {
  const options: Record<string, { maxBatchSize?: number; maxQueueSize?: number; spool?: false }> = {};
  for (const { name } of resources.sinks) {
    const highLatency = HIGH_LATENCY_SINK_OPTIONS[name];
    const optOut = config.spoolDir !== undefined && !resources.spooledSinks.includes(name);
    if (highLatency || optOut) options[name] = { ...highLatency, ...(optOut ? { spool: false as const } : {}) };
  }
  return options;
}

@Module({})
export class BenchModule {
  static register(config: ServerConfig, resources: ScenarioResources): DynamicModule {
    const controllers: Type<unknown>[] = [StatsController];
    const listeners: Type<unknown>[] = [];
    const services: Type<unknown>[] = [];
    for (const id of config.scenarios) {
      const effect = resources.effects.get(id);
      if (!effect) continue;
      controllers.push(id === 'realistic' && resources.realistic ? realisticController(resources.realistic) : scenarioController(id, effect));
      const offload = offloadController(id, effect);
      if (offload) controllers.push(offload);
      const spooled = spoolController(id, effect);
      if (spooled) controllers.push(spooled);
      const packed = packedController(id, effect);
      if (packed) controllers.push(packed);
      const handle = handleController(id, effect);
      if (handle) controllers.push(handle);
      const injected = injectedController(id, effect);
      if (injected) {
        controllers.push(injected.controller);
        services.push(injected.service);
      }
      listeners.push(effectListener(id, routeKey(id, 'event-emitter'), () => effect.perform()));
    }
    if (config.scenarios.includes('compression')) controllers.push(CompressionController);
    return {
      module: BenchModule,
      imports: [
        ...(resources.graphql ? [resources.graphql.module] : []),
        EventEmitterModule.forRoot(),
        DeferredWorkModule.forRoot({
          sinks: resources.sinks,
          // BENCH_CORRELATION=off measures the library without the correlation option (see tracing.ts)
          ...(process.env.BENCH_CORRELATION === 'off' ? { correlation: false as const } : {}),
          shutdownTimeoutMs: 15_000,
          // the module's spool (each sink in `<dir>/<sink name>`, default syncIntervalMs) for the
          // `deferred-spool` routes' twins only; every other sink opts out, so `deferred` stays unspooled
          ...(config.spoolDir ? { spool: { dir: config.spoolDir } } : {}),
          sinkOptions: sinkOptions(config, resources),
        }),
      ],
      controllers,
      providers: [NoopInterceptor, ...listeners, ...services, ...(resources.graphql ? [resources.graphql.resolver] : [])],
    };
  }
}
