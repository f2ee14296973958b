import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWorkHealthIndicator,
  DeferredWorkModule,
} from 'nestjs-deferred-work';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  @Get('health-spool')
  @HealthCheck()
  checkSpool() {
    return this.health.check([() => this.deferred.isHealthy('deferredWork', { spoolMaxAgeMs: 300, spoolFullRatio: 0.5 })]);
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

describe.each(platforms)('DeferredWorkHealthIndicator with a spooled sink ($name)', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let sink: RecordingSink;
  let dir: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dw-health-spool-'));
    sink = new RecordingSink('events');
    started = await startApp(platform, {
      imports: [
        TerminusModule.forRoot({ logger: false }),
        DeferredWorkModule.forRoot({
          sinks: [sink],
          maxQueueSize: 10,
          maxBatchSize: 10,
          initialBackoffMs: 10,
          maxBackoffMs: 20,
          shutdownTimeoutMs: 100,
          spool: { dir, maxBytes: 256 * 1024, segmentBytes: 32 * 1024 },
          maxItemBytes: 1024,
        }),
      ],
      controllers: [AppController],
    });
  });
  afterEach(async () => {
    await started.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds the overflow on disk (no "queue near full", nothing dropped), goes down past the age or size limit, and comes back up once delivered', async () => {
    sink.behaviour = 'reject';
    for (let i = 0; i < 30; i++) expect((await fetch(`${started.url}/work`)).status).toBe(200);
    await eventually(async () => {
      const res = await fetch(`${started.url}/health-spool`);
      expect(res.status).toBe(503);
      const health = ((await res.json()) as HealthBody).details.deferredWork;
      const reasons = health.reasons.join('\n');
      expect(reasons).toMatch(/sink "events" spool holds an item waiting for \d+ s \(over 300 ms\)/);
      expect(reasons).not.toMatch(/queue .* is near full|dropped/);
      expect(health.sinks.events).toMatchObject({ pending: 30, dropped: 0, spool: { pending: 30 } });
    });
    sink.behaviour = 'ok';
    await eventually(async () => {
      const res = await fetch(`${started.url}/health-spool`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as HealthBody).details.deferredWork.sinks.events).toMatchObject({ pending: 0, spool: { pending: 0 } });
    });
    // Every item, each with its own stable id (the sink records the refused tries too).
    expect(new Set(sink.items.map((item) => item.id)).size).toBe(30);
  });
});
