import { Controller, Get, Inject, Injectable, Module, UseInterceptors } from '@nestjs/common';
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

  it('registerInterceptor: false leaves routes alone unless the interceptor is bound with @UseInterceptors', async () => {
    const sink = new MemorySink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], registerInterceptor: false })],
      controllers: [PingController, BoundController],
    });
    expect(await (await fetch(`${started.url}/bound`)).text()).toBe('bound');
    await sink.waitFor(1);
    expect(started.app.get(DeferredWork).stats().requests.finished).toBe(1);
    // No interceptor on /ping: @Deferred() says how to fix it, as a 500, and no work is lost silently.
    expect((await fetch(`${started.url}/ping`)).status).toBe(500);
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

  it('an @AfterResponse() naming an unknown sink', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({})],
      controllers: [TypoController],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(/@AfterResponse\(\{ sinks: \{ log \} \}\) on TypoController.typo\(\)": no sink is named "htp"/);
    await app.close();
  });
});
