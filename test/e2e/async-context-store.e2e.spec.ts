import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context } from '@opentelemetry/api';
import { Controller, Injectable, Param, Post } from '@nestjs/common';
import { ClsModule } from 'nestjs-cls';
import { AfterResponse, DeferredWorkModule, InjectDeferredQueue, type JobItem, MemorySink } from 'nestjs-deferred-work';
import { DeferredAsyncContext } from '../../packages/nestjs-deferred-work/src/capture/async-context';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/**
 * Where injected handles find their request: in the app's own async context when it runs one —
 * nestjs-cls's, else the OpenTelemetry context manager's — and in the library's AsyncLocalStorage only
 * otherwise, so that no second store is entered. Either way, 100 concurrent requests, each handle call
 * after an await, land in their own request.
 */
@Injectable()
class SignupService {
  constructor(@InjectDeferredQueue('mail') private readonly mail: { add(name: string, data: unknown): Promise<unknown> }) {}

  async signup(user: string): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, Number(user) % 4));
    await this.mail.add('welcome', { user });
  }
}

@Controller()
class SignupController {
  constructor(private readonly service: SignupService) {}

  @Post('signup/:user')
  @AfterResponse()
  async signup(@Param('user') user: string) {
    await this.service.signup(user);
    return { user };
  }
}

failOnUnhandledRejection();

const stores = [
  { store: 'cls', imports: [ClsModule.forRoot({ global: true, middleware: { mount: true } })], otel: false },
  { store: 'opentelemetry', imports: [], otel: true },
  { store: 'own', imports: [], otel: false },
] as const;

describe.each(platforms)('the async context of injected handles on $name', (platform) => {
  let started: StartedApp | undefined;
  afterEach(async () => {
    await started?.close();
    context.disable();
  });

  it.each(stores)('$store: the scope is kept there, and 100 concurrent requests do not cross', async ({ store, imports, otel }) => {
    if (otel) context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const sink = new MemorySink({ name: 'jobs' });
    started = await startApp(platform, {
      imports: [
        ...imports,
        DeferredWorkModule.forRoot({ sinks: [sink], correlation: { requestId: (req) => (req as { url?: string }).url?.split('/')[2] }, flushIntervalMs: 5 }),
      ],
      controllers: [SignupController],
      providers: [SignupService],
    });
    expect(started.app.get(DeferredAsyncContext).storeKind).toBe(store);
    const users = Array.from({ length: 100 }, (_, i) => String(i));
    const statuses = await Promise.all(users.map((u) => fetch(`${started!.url}/signup/${u}`, { method: 'POST' }).then((r) => r.status)));
    expect(statuses.every((s) => s === 201)).toBe(true);
    await eventually(() => expect(sink.items).toHaveLength(100), 10_000);
    const crossed = (sink.items as JobItem[]).filter((job) => (job.data as { user: string }).user !== job.correlation?.requestId);
    expect(crossed).toEqual([]);
  });
});
