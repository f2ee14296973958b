import Bull from 'bull';
import { Queue } from 'bullmq';
import { compileFixture, NodeApp } from '../support/node-app';
import { RedisServer } from '../support/redis-server';

/**
 * Backlog at shutdown, as a real process, for Bull and BullMQ: jobs for a queue that nothing has written to yet
 * (a long linger holds them back), then SIGTERM. The queue was closed by `@nestjs/bull` before the
 * drain when the sink held queues open only from their first write; now every registered queue is
 * held from bootstrap.
 */
const redis = new RedisServer();
const RUN = `dw-cold-${process.pid}-${Date.now().toString(36)}`;
let app: NodeApp | undefined;

/** The two queue libraries (the fixture app takes QUEUE_LIB), each with its sink's name and a look at what reached Redis. */
const libraries = [
  {
    library: 'Bull',
    queueLib: 'bull',
    sink: 'bull',
    async look(prefix: string) {
      const queue = new Bull('cold', { redis: { host: redis.host, port: redis.port }, prefix });
      try {
        return { waiting: await queue.getWaitingCount(), last: await queue.getJob('job-299') };
      } finally {
        await queue.close();
      }
    },
  },
  {
    library: 'BullMQ',
    queueLib: 'bullmq',
    sink: 'bullmq',
    async look(prefix: string) {
      const queue = new Queue('cold', { connection: { host: redis.host, port: redis.port }, prefix });
      try {
        return { waiting: await queue.getWaitingCount(), last: await queue.getJob('job-299') };
      } finally {
        await queue.close();
      }
    },
  },
];
let file: string;

beforeAll(async () => {
  file = compileFixture('cold-queue.app');
  await redis.start();
});
afterEach(() => app?.kill());
afterAll(() => redis.dispose());

async function startColdApp(queueLib: string, prefix: string, shutdownTimeoutMs: number): Promise<{ app: NodeApp; url: string }> {
  const env = { QUEUE_LIB: queueLib, REDIS_PORT: String(redis.port), PREFIX: prefix, SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) };
  const started = new NodeApp(file, env);
  const { port } = await started.json<{ port: number }>('port');
  return { app: started, url: `http://127.0.0.1:${port}` };
}

async function send(url: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += 30) {
    const batch = Array.from({ length: Math.min(30, count - i) }, (_, j) => fetch(`${url}/job/${i + j}`).then((r) => r.status));
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
}

interface Final {
  report: { drained: boolean; undelivered: Record<string, number>; inFlight?: Record<string, number> };
  stats: { accepted: number; delivered: number; pending: number; deadLettered: number };
}

describe.each(libraries)('$library sink: backlog for a never-written queue at SIGTERM (a real process)', ({ library, queueLib, sink, look }) => {
  it('300 jobs held by the linger all reach Redis, and the process exits 0', async () => {
    const prefix = `${RUN}-${library}-ok`;
    const started = await startColdApp(queueLib, prefix, 5000);
    app = started.app;
    expect((await send(started.url, 300)).every((s) => s === 200)).toBe(true);

    app.signal('SIGTERM');
    const exit = await app.exited;
    const final = await app.json<Final>('report', 1000);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(final.report).toEqual({ drained: true, undelivered: {} });
    expect(final.stats).toMatchObject({ accepted: 300, delivered: 300, pending: 0, deadLettered: 0 });
    expect(app.output).not.toMatch(/is closed|dead-lettered/);
    const found = await look(prefix);
    expect(found.waiting).toBe(300);
    expect(found.last).toBeTruthy();
  }, 30_000);

  it('with Redis stopped during shutdown, it ends by its deadline and reports the undelivered count', async () => {
    const started = await startColdApp(queueLib, `${RUN}-${library}-dead`, 1000);
    app = started.app;
    expect((await send(started.url, 300)).every((s) => s === 200)).toBe(true);
    await redis.stop();

    const began = Date.now();
    app.signal('SIGTERM');
    const exit = await app.exited;
    const took = Date.now() - began;
    const final = await app.json<Final>('report', 1000);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(took).toBeLessThan(1000 + 4000); // the drain's deadline, then Bull's own bounded close
    // A write that Redis's stop caught in flight is counted apart (it may have been delivered), within the 300.
    const { inFlight, ...report } = final.report;
    expect(report).toEqual({ drained: false, undelivered: { [sink]: 300 } });
    const cut = inFlight?.[sink] ?? 0;
    expect(cut).toBeLessThanOrEqual(300);
    expect(final.stats).toMatchObject({ accepted: 300, delivered: 0, pending: 0, deadLettered: 300 });
    expect(app.output).toMatch(new RegExp(`Shutdown deadline \\(1000 ms\\) passed with 300 items undelivered \\(${sink}: 300\\)`));
    if (cut > 0) expect(app.output).toContain(`${300 - cut} never sent, and ${cut} in a write still in flight (${sink}: ${cut})`);
    await redis.start();
  }, 30_000);
});
