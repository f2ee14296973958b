import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWorkHealthIndicator,
  DeferredWorkModule,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';
import { RecordingSink } from '../support/recording.sink';

interface HealthBody {
  status: string;
  details: { deferredWork: { degraded: boolean; reasons: string[]; sinks: Record<string, object> } };
}

@Controller()
class AppController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(DeferredWorkHealthIndicator) private readonly deferred: DeferredWorkHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.deferred.isHealthy('deferredWork')]);
  }

  @Get('work')
  @AfterResponse()
  work(@Deferred() work: DeferredScope) {
    work.log('info', 'x');
    return 'ok';
  }
}

describe.each(platforms)('DeferredWorkHealthIndicator with @nestjs/terminus ($name)', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let sink: RecordingSink;

  beforeEach(async () => {
    sink = new RecordingSink('events');
    started = await startApp(platform, {
      imports: [
        TerminusModule.forRoot({ logger: false }),
        DeferredWorkModule.forRoot({ sinks: [sink], maxQueueSize: 10, maxBatchSize: 10, writeTimeoutMs: 60_000, shutdownTimeoutMs: 100 }),
      ],
      controllers: [AppController],
    });
  });
  afterEach(() => started.close());

  it('is up while the sink keeps up, and down (degraded, with reasons) when its queue fills and drops', async () => {
    const healthy = await fetch(`${started.url}/health`);
    expect(healthy.status).toBe(200);
    expect(((await healthy.json()) as HealthBody).details.deferredWork).toMatchObject({ status: 'up', degraded: false, reasons: [] });

    sink.behaviour = 'hang'; // the sink stops answering: items pile up, then drop
    for (let i = 0; i < 15; i++) expect((await fetch(`${started.url}/work`)).status).toBe(200);
    await eventually(async () => {
      const res = await fetch(`${started.url}/health`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as HealthBody;
      expect(body.status).toBe('error');
      expect(body.details.deferredWork.degraded).toBe(true);
      expect(body.details.deferredWork.reasons.join('\n')).toMatch(/sink "events" queue 10\/10 is near full/);
      expect(body.details.deferredWork.reasons.join('\n')).toMatch(/sink "events" dropped items/);
      expect(body.details.deferredWork.sinks.events).toMatchObject({ pending: 10, maxQueueSize: 10, dropped: 5 });
    });
  });
});
