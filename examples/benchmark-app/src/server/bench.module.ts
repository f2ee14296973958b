/**
 * The benchmark app: for each scenario, four routes doing the same side-effect four ways
 * (`GET /<scenario>/<variant>`), plus the undecorated `GET /__bench/stats` the runner reads.
 */
import { Controller, type DynamicModule, Get, Inject, Module, Query, type Type, UseInterceptors } from '@nestjs/common';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
} from 'nestjs-deferred-work';
import type { ScenarioId, ServerConfig, ServerSnapshot } from '../bench/types.js';
import { blockingDone, blockingInFlight, countHandled, handled, runBlocking } from './counters.js';
import { CompressionController } from './compression.js';
import type { ScenarioEffect, ScenarioResources } from './effects.js';
import { NoopInterceptor } from './noop.interceptor.js';

const OK = { ok: true } as const;

/**
 * One write is in flight per sink, so a sink delivers at most `maxBatchSize` items per write latency:
 * with the defaults (512) and a 25–30 ms write that is about 20,000 items/s, which Fastify exceeds on
 * the 25 ms and Redis-behind-a-proxy scenarios (the queue fills and items are dropped, and counted).
 * The slow sinks therefore get bigger batches and room for one more batch's worth of backlog, as an
 * app expecting that load would configure them.
 */
const HIGH_LATENCY_SINK_OPTIONS: Record<string, { maxBatchSize: number; maxQueueSize: number }> = {
  callbacks: { maxBatchSize: 2048, maxQueueSize: 8192 },
  'bull-proxy': { maxBatchSize: 2048, maxQueueSize: 8192 },
};

/**
 * One controller per scenario. The `deferred` route uses the library as an app would: `@AfterResponse()`
 * and `@Deferred()`, which need no interceptor (none is registered globally either), so `plain` runs
 * with no interceptor at all and `noop-interceptor` isolates what any Nest interceptor costs.
 */
function scenarioController(id: ScenarioId, effect: ScenarioEffect): Type<unknown> {
  const keys = { plain: `${id}/plain`, noop: `${id}/noop-interceptor`, blocking: `${id}/blocking`, deferred: `${id}/deferred` };

  @Controller(id)
  class ScenarioController {
    @Get('plain')
    plain() {
      countHandled(keys.plain);
      return OK;
    }

    @Get('noop-interceptor')
    @UseInterceptors(NoopInterceptor)
    noop() {
      countHandled(keys.noop);
      return OK;
    }

    @Get('blocking')
    async blocking() {
      countHandled(keys.blocking);
      await runBlocking(keys.blocking, () => effect.blocking());
      return OK;
    }

    @Get('deferred')
    @AfterResponse(effect.afterResponse)
    deferred(@Deferred() work: DeferredScope) {
      countHandled(keys.deferred);
      effect.defer(work);
      return OK;
    }
  }
  Object.defineProperty(ScenarioController, 'name', { value: `Controller_${id.replace(/\W/g, '_')}` });
  return ScenarioController;
}

@Controller('__bench')
class StatsController {
  constructor(@Inject(DeferredWork) private readonly work: DeferredWork) {}

  /**
   * Server CPU, counters and `stats()`; with `?flush=1`, after draining what is pending (deferred
   * items and blocking handlers still awaiting their side-effect).
   */
  @Get('stats')
  async stats(@Query('flush') flush?: string): Promise<ServerSnapshot> {
    let flushed: boolean | undefined;
    if (flush) {
      const deadline = Date.now() + 15_000;
      while (blockingInFlight.count > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      flushed = (await this.work.flush(Math.max(1, deadline - Date.now()))) && blockingInFlight.count === 0;
    }
    const s = this.work.stats();
    return {
      cpu: process.cpuUsage(),
      rssBytes: process.memoryUsage.rss(),
      handled: { ...handled },
      routes: Object.fromEntries(
        Object.entries(s.routes ?? {}).map(([route, t]) => [route, { count: t.count, handlerMsAvg: t.handlerMsAvg, sendMsAvg: t.sendMsAvg }]),
      ),
      blockingDone: { ...blockingDone },
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
    };
  }
}

@Module({})
export class BenchModule {
  static register(config: ServerConfig, resources: ScenarioResources): DynamicModule {
    const controllers: Type<unknown>[] = [StatsController];
    for (const id of config.scenarios) {
      const effect = resources.effects.get(id);
      if (effect) controllers.push(scenarioController(id, effect));
    }
    if (config.scenarios.includes('compression')) controllers.push(CompressionController);
    return {
      module: BenchModule,
      imports: [
        DeferredWorkModule.forRoot({
          sinks: resources.sinks,
          shutdownTimeoutMs: 15_000,
          // only for sinks this server has (an unknown sink name fails the bootstrap)
          sinkOptions: Object.fromEntries(
            Object.entries(HIGH_LATENCY_SINK_OPTIONS).filter(
              ([name]) => name === 'callbacks' || resources.sinks.some((sink) => sink.name === name),
            ),
          ),
        }),
      ],
      controllers,
      providers: [NoopInterceptor],
    };
  }
}
