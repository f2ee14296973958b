import { Controller, Get, Inject, Injectable, Module, Req, UseInterceptors } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkConfigError,
  DeferredWorkInterceptor,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  MemorySink,
} from 'nestjs-deferred-work';
import { GLOBAL_INTERCEPTOR_REGISTERED as GLOBAL_INTERCEPTOR_REGISTERED_FOR_TESTS } from '../../packages/nestjs-deferred-work/src/nest/deferred-work.module-definition';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';
import { RecordingSink } from '../support/recording.sink';

@Controller()
class PingController {
  @Get('ping')
  @AfterResponse()
  ping(@Deferred() work: DeferredScope) {
    work.log('info', 'ping');
    return 'pong';
  }
}

@Controller()
@UseInterceptors(DeferredWorkInterceptor)
class BoundController {
  @Get('bound')
  @AfterResponse()
  bound(@Deferred() work: DeferredScope) {
    work.log('info', 'bound');
    return 'bound';
  }
}

@Controller()
class ForRequestController {
  constructor(@Inject(DeferredWork) private readonly work: DeferredWork) {}

  @Get('via-request')
  @AfterResponse()
  viaRequest(@Req() req: object) {
    const scope = this.work.forRequest(req); // no @Deferred(): @AfterResponse() bound the interceptor here
    scope.log('info', 'via request');
    scope.job('mail', 'only-on-success', {});
    throw new Error('after deferring');
  }
}

@Controller()
class TypoController {
  @Get('typo')
  @AfterResponse({ sinks: { log: 'htp' } })
  typo() {
    return 'never';
  }
}

@Injectable()
class Settings {
  readonly sink = new MemorySink({ name: 'configured' });
  readonly batch = 7;
}

@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

@Injectable()
class OptionsFactory {
  constructor(@Inject(Settings) private readonly settings: Settings) {}
  createDeferredWorkOptions(): DeferredWorkModuleOptions {
    return { sinks: [this.settings.sink], maxBatchSize: this.settings.batch };
  }
}

describe.each(platforms)('DeferredWorkModule configuration ($name)', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp | undefined;
  afterEach(async () => {
    await started?.close();
    started = undefined;
  });

  it('forRootAsync with imports, inject and useFactory', async () => {
    started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings) => ({ sinks: [settings.sink], maxBatchSize: settings.batch }),
        }),
      ],
      controllers: [PingController],
    });
    expect(await (await fetch(`${started.url}/ping`)).text()).toBe('pong');
    const sink = started.app.get(Settings, { strict: false }).sink;
    await sink.waitFor(1);
    expect(started.app.get(DeferredWork).stats().sinks.configured.delivered).toBe(1);
  });

  it('forRootAsync with useClass', async () => {
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRootAsync({ imports: [SettingsModule], useClass: OptionsFactory })],
      controllers: [PingController],
    });
    await fetch(`${started.url}/ping`);
    await started.app.get(Settings, { strict: false }).sink.waitFor(1);
  });

  it('routes using @Deferred() need no interceptor; @AfterResponse() binds it where forRequest(req) is used', async () => {
    const sink = new MemorySink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1 })],
      controllers: [PingController, BoundController, ForRequestController],
    });
    // No global interceptor, and none bound on a route that takes @Deferred().
    expect(started.app.get(GLOBAL_INTERCEPTOR_REGISTERED_FOR_TESTS)).toBe('auto-off');
    expect(Reflect.getMetadata('__interceptors__', PingController.prototype.ping)).toBeUndefined();
    expect(Reflect.getMetadata('__interceptors__', ForRequestController.prototype.viaRequest)).toEqual([DeferredWorkInterceptor]);
    expect(await (await fetch(`${started.url}/ping`)).text()).toBe('pong');
    expect(await (await fetch(`${started.url}/bound`)).text()).toBe('bound');
    const res = await fetch(`${started.url}/via-request`);
    expect(res.status).toBe(500); // the handler threw after deferring: its success-only job must not run
    await sink.waitFor(3);
    await eventually(() => expect(started!.app.get(DeferredWork).stats().requests.finished).toBe(3));
    expect(sink.items.map((i) => (i.kind === 'log' ? i.message : i.kind)).sort()).toEqual(['bound', 'ping', 'via request']);
    expect(started.app.get(DeferredWork).stats().skipped).toBe(1);
  });

  it('application shutdown drains pending work', async () => {
    const sink = new RecordingSink();
    let release!: () => void;
    sink.gate = new Promise((r) => (release = r));
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], maxBatchSize: 2, shutdownTimeoutMs: 5000 })],
      controllers: [PingController],
    });
    for (let i = 0; i < 5; i++) await fetch(`${started.url}/ping`);
    const work = started.app.get(DeferredWork);
    setTimeout(release, 50);
    await started.close();
    started = undefined;
    expect(sink.items).toHaveLength(5);
    expect(work.stats()).toMatchObject({ accepted: 5, delivered: 5, pending: 0, deadLettered: 0 });
  });
});

describe('bad configuration fails at bootstrap with a fix', () => {
  it('an invalid option', async () => {
    const compiling = Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({ maxQueueSize: -5 })],
    }).compile();
    await expect(compiling).rejects.toThrow(DeferredWorkConfigError);
    await expect(
      Test.createTestingModule({ imports: [DeferredWorkModule.forRoot({ maxQueueSize: -5 })] }).compile(),
    ).rejects.toThrow(/invalid option "maxQueueSize": expected a whole number >= 1, got -5/);
  });

  it('routing to a sink that is not configured', async () => {
    await expect(
      Test.createTestingModule({ imports: [DeferredWorkModule.forRoot({ routing: { job: 'bull' } })] }).compile(),
    ).rejects.toThrow(/invalid option "routing.job": no sink is named "bull" \(configured: "memory"\)\. Add a sink/);
  });

  it('asyncContext through forRootAsync without registerInterceptor: true', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRootAsync({ useFactory: () => ({ asyncContext: true }) })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(
      /invalid option "asyncContext": asyncContext needs DeferredWorkInterceptor.*Pass registerInterceptor: true next to useFactory/,
    );
    await app.close();
  });

  it('an @AfterResponse() naming an unknown sink', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({})],
      controllers: [TypoController],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(/@AfterResponse\(\{ sinks: \{ log \} \}\) on TypoController.typo\(\)": no sink is named "htp"/);
    await app.close();
  });

  it('a bootstrap that fails lets go of the spools it opened: the fixed app (or the next start) opens them', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'dw-bootstrap-spool-'));
    try {
      const broken = await Test.createTestingModule({ imports: [DeferredWorkModule.forRoot({ spool: { dir } })], controllers: [TypoController] }).compile();
      const failed = broken.createNestApplication({ logger: false });
      await expect(failed.init()).rejects.toThrow(/no sink is named "htp"/);
      const fixed = await Test.createTestingModule({ imports: [DeferredWorkModule.forRoot({ spool: { dir } })] }).compile();
      const app = fixed.createNestApplication({ logger: false });
      await expect(app.init()).resolves.toBe(app);
      await app.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
