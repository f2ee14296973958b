import { Controller, type INestMicroservice } from '@nestjs/common';
import { EventPattern, Payload, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Queue } from 'bullmq';
import { compileFixture, NodeApp } from '../support/node-app';
import { eventually } from '../support/eventually';
import { platforms } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * Migrating a service to the deferred handles by changing only its decorators (and `Logger` →
 * `DeferredLogger`), against the real components, as two processes per adapter
 * (test/fixtures/handles-migration.app.ts): the same 50 requests give the same BullMQ jobs in Redis,
 * the same events at a Nest microservice listener, the same log lines through nestjs-pino and the
 * same prom-client counter — the deferred variant after each response, and with the metric fanned
 * out to OpenTelemetry too (counted exactly there as well) and every log record also bridged to
 * OpenTelemetry Logs, carrying its request's trace id.
 */
const N = 50;
const redis = new RedisServer();
const RUN = `dw-migrate-${process.pid}-${Date.now().toString(36)}`;
let file: string;
let listener: INestMicroservice;
const events: Array<{ user: string }> = [];

@Controller()
class EventsListener {
  @EventPattern('user.welcomed')
  welcomed(@Payload() data: { user: string }) {
    events.push(data);
  }
}

beforeAll(async () => {
  await redis.start();
  file = compileFixture('handles-migration.app');
  const moduleRef = await Test.createTestingModule({ controllers: [EventsListener] }).compile();
  listener = moduleRef.createNestMicroservice({ transport: Transport.REDIS, options: { host: redis.host, port: redis.port } } as never);
  listener.useLogger(false);
  await listener.listen();
}, 60_000);
afterAll(async () => {
  await listener?.close();
  await redis.dispose();
});

interface Report {
  otelWelcomes: number;
  logRecords: Array<{ body: string; context: string; traceId?: string }>;
  requestSpans: Array<{ name: string; traceId: string }>;
  stats: { accepted: number; delivered: number; pending: number; deadLettered: number; rejected: number };
}

interface Outcome {
  jobs: Array<{ name: string; user: string; jobId: string }>;
  events: string[];
  logLines: Array<{ msg: string; context: string }>;
  promWelcomes: number;
  report: Report;
}

/** Runs one variant: N concurrent requests, then what every component received. */
async function runVariant(variant: 'original' | 'deferred', adapter: string): Promise<Outcome> {
  const prefix = `${RUN}-${variant}-${adapter}`;
  const app = new NodeApp(file, { VARIANT: variant, ADAPTER: adapter, REDIS_PORT: String(redis.port), PREFIX: prefix });
  try {
    const { port } = await app.json<{ port: number }>('port', 30_000);
    const url = `http://127.0.0.1:${port}`;
    const users = Array.from({ length: N }, (_, i) => `${variant[0]}-${adapter}-${i}`);
    const statuses = await Promise.all(users.map((u) => fetch(`${url}/users/${u}/welcome`, { method: 'POST' }).then((r) => r.status)));
    expect(statuses.every((s) => s === 201)).toBe(true);
    const mine = () => events.filter((e) => users.includes(e.user));
    await eventually(() => expect(mine()).toHaveLength(N), 10_000);
    let report!: Report;
    await eventually(async () => {
      report = (await (await fetch(`${url}/report`)).json()) as Report;
      if (variant === 'deferred') expect(report.stats).toMatchObject({ pending: 0, delivered: report.stats.accepted });
    }, 10_000);
    const queue = new Queue('mail', { connection: { host: redis.host, port: redis.port }, prefix });
    const jobs = (await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'])).map((job) => ({
      name: job.name,
      user: (job.data as { user: string }).user,
      jobId: String(job.id),
    }));
    await queue.close();
    const metricsText = await (await fetch(`${url}/metrics`)).text();
    const prom = /^welcomes_total\{channel="web"\} (\d+)/m.exec(metricsText);
    const logLines = app.output
      .split('\n')
      .filter((line) => line.startsWith('{') && line.includes('welcome queued for'))
      .map((line) => JSON.parse(line) as { msg: string; context: string });
    return { jobs, events: mine().map((e) => e.user), logLines, promWelcomes: Number(prom?.[1] ?? 0), report };
  } finally {
    app.signal('SIGTERM');
    await Promise.race([app.exited, new Promise((r) => setTimeout(r, 5000))]);
    app.kill();
  }
}

/** A user id without its variant letter, so both variants compare. */
const strip = (user: string) => user.slice(2);

describe.each(platforms)('a service migrated to the deferred handles by its decorators ($name)', ({ name: adapter }) => {
  it(`delivers the same jobs, events, log lines and metric values as before, ${N} concurrent requests, nothing crossed between requests`, async () => {
    const before = await runVariant('original', adapter);
    const after = await runVariant('deferred', adapter);

    const jobs = (o: Outcome) => o.jobs.map((j) => `${j.name} ${strip(j.user)} ${strip(j.jobId.replace('welcome-', ''))}`).sort();
    expect(before.jobs).toHaveLength(N);
    expect(jobs(after)).toEqual(jobs(before));
    expect(after.jobs.every((j) => j.jobId === `welcome-${j.user}`)).toBe(true); // each request's job carries its own user

    expect(after.events.map(strip).sort()).toEqual(before.events.map(strip).sort());

    const lines = (o: Outcome) => o.logLines.map((l) => `${l.context}: ${l.msg.replace(/ [od]-/, ' ')}`).sort();
    expect(before.logLines).toHaveLength(N);
    expect(lines(after)).toEqual(lines(before));

    expect(before.promWelcomes).toBe(N);
    expect(after.promWelcomes).toBe(N);
    expect(after.report.otelWelcomes).toBe(N); // fanned out: counted exactly in both metrics sinks

    // Every deferred log record bridged to OpenTelemetry carries its own request's trace id.
    const traceOf = new Map(after.report.requestSpans.map((s) => [s.name.replace(/^POST \/users\/(.*)\/welcome$/, '$1'), s.traceId]));
    const records = after.report.logRecords.filter((r) => r.body.startsWith('welcome queued for'));
    expect(records).toHaveLength(N);
    const wrong = records.filter((r) => r.traceId === undefined || r.traceId !== traceOf.get(r.body.replace('welcome queued for ', '')));
    expect(wrong).toEqual([]);
    expect(records.every((r) => r.context === 'MailService')).toBe(true);

    // jobs, events, logs (×2 sinks), metrics (×2 sinks): every copy accounted for
    expect(after.report.stats).toMatchObject({ accepted: N * 6, delivered: N * 6, pending: 0, deadLettered: 0, rejected: 0 });
  }, 120_000);
});
