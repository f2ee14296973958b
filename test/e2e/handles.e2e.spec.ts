import { Controller, Get, Injectable, Module, Param, Post } from '@nestjs/common';
import {
  AfterResponse,
  Deferred,
  type DeferredJobReceipt,
  type DeferredMetricHandle,
  DeferredLogger,
  DeferredMetrics,
  DeferredWork,
  DeferredWorkModule,
  InjectDeferredClient,
  InjectDeferredMetric,
  InjectDeferredPinoLogger,
  InjectDeferredQueue,
  type DeferredPinoLogger,
  type JobItem,
  type LogItem,
  MemorySink,
  type MetricItem,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { load, range } from '../support/load';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/**
 * The deferred handles, injected (found through the async context the module turns on for them) and
 * as handler parameters: what a handler already calls — `queue.add`, `client.emit`, `logger.log`,
 * `counter.inc` — deferred until the response has finished, per request, with no cross-request leak.
 */

/** The shape of a BullMQ queue's `add` as a migrated service declares it (no BullMQ needed here). */
interface QueueLike {
  add(name: string, data: unknown, opts?: object): Promise<{ id?: string }>;
  addBulk(jobs: Array<{ name: string; data: unknown; opts?: object }>): Promise<Array<{ id?: string }>>;
}
interface ClientLike {
  emit(pattern: string, data: unknown): { subscribe(o?: unknown): unknown };
}

@Injectable()
class MailService {
  private readonly logger = new DeferredLogger(MailService.name);
  private readonly signups: ReturnType<DeferredMetrics['getCounter']>;

  constructor(
    @InjectDeferredQueue('mail') private readonly mail: QueueLike,
    @InjectDeferredClient('EVENTS') private readonly events: ClientLike,
    @InjectDeferredMetric('welcomes') private readonly welcomes: DeferredMetricHandle,
    metrics: DeferredMetrics,
    @InjectDeferredPinoLogger('Audit') private readonly audit: DeferredPinoLogger,
  ) {
    this.signups = metrics.getCounter('signups');
  }

  /** What a handler's service does; it awaits something first (the async context must carry the request across). */
  async welcome(user: string, requestId: string): Promise<string | undefined> {
    await new Promise((resolve) => setTimeout(resolve, 1 + (Number(user.replace(/\D/g, '')) % 5)));
    const receipt = await this.mail.add('welcome', { user, requestId }, { attempts: 3 });
    this.events.emit('user.welcomed', { user, requestId });
    this.logger.log('welcome queued', { user, requestId });
    this.welcomes.inc({ channel: 'web' });
    this.signups.add(1, { plan: 'free' });
    this.audit.info({ user }, 'audited %s', user);
    return receipt.id;
  }
}

@Controller('users')
class UsersController {
  constructor(private readonly service: MailService) {}

  @Post(':id/welcome')
  @AfterResponse()
  async welcome(@Param('id') id: string) {
    return { job: await this.service.welcome(id, id) };
  }

  @Post(':id/fail')
  @AfterResponse()
  async fail(@Param('id') id: string) {
    await this.service.welcome(id, id);
    throw new Error('after the side effects were deferred');
  }

  /** The handles as parameters: bound to this request, no async context needed. */
  @Get(':id/param')
  @AfterResponse()
  async param(
    @Param('id') id: string,
    @Deferred.queue('mail') mail: QueueLike,
    @Deferred.logger() logger: DeferredLogger,
    @Deferred.metric('welcomes') welcomes: DeferredMetricHandle,
  ) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    const [receipt] = await mail.addBulk([{ name: 'welcome', data: { user: id, requestId: id } }]);
    logger.log('param welcome', { user: id, requestId: id });
    welcomes.labels({ channel: 'web' }).inc(2);
    return { job: receipt.id };
  }
}

@Module({ providers: [MailService], controllers: [UsersController] })
class UsersModule {}

failOnUnhandledRejection();

describe.each(platforms)('deferred handles on $name', (platform) => {
  let started: StartedApp;
  let jobs: MemorySink;
  let events: MemorySink;
  let logs: MemorySink;
  let metrics: MemorySink;
  let work: DeferredWork;

  beforeEach(async () => {
    jobs = new MemorySink({ name: 'jobs' });
    events = new MemorySink({ name: 'EVENTS' });
    logs = new MemorySink({ name: 'logs' });
    metrics = new MemorySink({ name: 'metrics' });
    started = await startApp(platform, {
      imports: [
        DeferredWorkModule.forRoot({
          sinks: [jobs, events, logs, metrics],
          routing: { job: 'jobs', log: 'logs', metric: 'metrics' },
          correlation: { requestId: (req) => String((req as { url?: string }).url?.split('/')[2]) },
          flushIntervalMs: 5,
        }),
        UsersModule,
      ],
    });
    work = started.app.get(DeferredWork);
  });
  afterEach(() => started.close());

  const byRequest = <T extends { correlation?: { requestId?: string } }>(items: T[]) => new Map(items.map((i) => [i.correlation?.requestId, i]));

  it('200 concurrent requests: each handle call lands in its own request, after the response, exactly once', async () => {
    const ids = range(0, 200).map((i) => `u${i}`);
    const statuses = await load(started.url, [], 1);
    expect(statuses).toEqual([]);
    const posts = await Promise.all(ids.map((id) => fetch(`${started.url}/users/${id}/welcome`, { method: 'POST' }).then(async (r) => ({ status: r.status, body: (await r.json()) as { job: string } }))));
    expect(posts.every((p) => p.status === 201)).toBe(true);
    await eventually(() => expect(work.stats()).toMatchObject({ accepted: 1200, delivered: 1200, pending: 0 }), 10_000);
    const job = byRequest(jobs.items as JobItem[]);
    const event = byRequest(events.items as JobItem[]);
    const log = byRequest((logs.items as LogItem[]).filter((l) => l.context === 'MailService'));
    const audit = byRequest((logs.items as LogItem[]).filter((l) => l.context === 'Audit'));
    const leaks: string[] = [];
    ids.forEach((id, i) => {
      const j = job.get(id)!;
      if ((j.data as { user: string }).user !== id) leaks.push(`job ${id}`);
      if (j.id !== posts[i].body.job) leaks.push(`receipt ${id}`); // the receipt's id is the job's
      if ((event.get(id)!.data as { user: string }).user !== id) leaks.push(`event ${id}`);
      if ((log.get(id)!.fields as { user: string }).user !== id) leaks.push(`log ${id}`);
      if (audit.get(id)!.message !== `audited ${id}`) leaks.push(`pino-style log ${id}`);
    });
    expect(leaks).toEqual([]);
    expect(jobs.items).toHaveLength(200);
    expect((jobs.items[0] as JobItem)).toMatchObject({ queue: 'mail', name: 'welcome', opts: { attempts: 3 }, when: 'success' });
    expect((events.items[0] as JobItem)).toMatchObject({ queue: 'EVENTS', name: 'user.welcomed', sink: 'EVENTS' });
    expect((logs.items[0] as LogItem)).toMatchObject({ level: 'log', message: 'welcome queued', context: 'MailService' });
    const points = metrics.items as MetricItem[];
    expect(points.filter((m) => m.name === 'welcomes')).toHaveLength(200);
    expect(points.find((m) => m.name === 'welcomes')).toMatchObject({ value: 1, tags: { channel: 'web' } });
    expect(points.find((m) => m.name === 'signups')).toMatchObject({ value: 1, tags: { plan: 'free' } });
  });

  it("a request that fails: the job and the event (when: success) are not sent; the log and metrics (always) are", async () => {
    const res = await fetch(`${started.url}/users/x1/fail`, { method: 'POST' });
    expect(res.status).toBe(500);
    await eventually(() => expect(work.stats().skipped).toBe(2));
    expect(await work.flush(2000)).toBe(true);
    expect(jobs.items).toHaveLength(0);
    expect(events.items).toHaveLength(0);
    expect(logs.items).toHaveLength(2);
    expect(metrics.items).toHaveLength(2);
  });

  it('the handles as handler parameters defer for their request, without an async context of their own', async () => {
    const res = await fetch(`${started.url}/users/p7/param`);
    const body = (await res.json()) as { job: string };
    await eventually(() => expect(work.stats().delivered).toBe(3));
    expect(jobs.items).toEqual([expect.objectContaining({ id: body.job, queue: 'mail', data: { user: 'p7', requestId: 'p7' }, correlation: { requestId: 'p7' } })]);
    expect(logs.items).toEqual([expect.objectContaining({ message: 'param welcome', context: 'UsersController', correlation: { requestId: 'p7' } })]);
    expect(metrics.items).toEqual([expect.objectContaining({ name: 'welcomes', value: 2 })]);
  });

  it('outside a request (a cron, a consumer), the handles send at once', async () => {
    const service = started.app.get(MailService);
    const receipt = await service.welcome('c1', 'cron');
    expect(receipt).toMatch(/^dw-/);
    expect(await work.flush(2000)).toBe(true);
    expect(jobs.items).toEqual([expect.objectContaining({ id: receipt, data: { user: 'c1', requestId: 'cron' } })]);
  });

  it('the receipt of add() is what a migrated handler reads of a job', async () => {
    const mail = started.app.get<QueueLike>('DeferredQueue_mail');
    const receipt = (await mail.add('welcome', { user: 'r' }, { jobId: 'welcome-r' })) as unknown as DeferredJobReceipt;
    expect(receipt).toEqual({ id: 'welcome-r', name: 'welcome', data: { user: 'r' }, opts: { jobId: 'welcome-r' }, queueName: 'mail', deferred: true });
    expect(() => (mail as unknown as { getJobCounts(): unknown }).getJobCounts()).toThrow(/Queue "mail" is not registered, so only add\(\) and addBulk\(\)/);
  });
});
