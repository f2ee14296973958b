import { Redis } from 'ioredis';
import { load, range } from '../support/load';
import { compileFixture, NodeApp } from '../support/node-app';
import { RedisServer } from '../support/redis-server';

/**
 * RedisStreamSink's backlog at SIGTERM, as a real process (test/fixtures/redis-stream-process.app.ts):
 * 300 entries held back by a long flush interval are appended before the process exits 0; with Redis
 * stopped, the shutdown ends by its deadline and reports the 300 as undelivered.
 */
const redis = new RedisServer();
const RUN = `dw-stream-term-${process.pid}`;
let fixture: string;
let app: NodeApp | undefined;
let admin: Redis;

beforeAll(async () => {
  fixture = compileFixture('redis-stream-process.app');
  await redis.start();
  admin = new Redis({ host: redis.host, port: redis.port, retryStrategy: () => 50 });
});
afterEach(async () => {
  app?.kill();
  await app?.exited;
  app = undefined;
});
afterAll(async () => {
  admin.disconnect();
  await redis.dispose();
});

interface Final {
  report: { drained: boolean; undelivered: Record<string, number> };
  stats: { sinks: Record<string, { accepted: number; delivered: number; pending: number; deadLettered: number }> };
}

/** The app, its backlog held by a long flush interval and a large batch, retrying without end (until the shutdown's deadline). */
async function start(stream: string, shutdownTimeoutMs: number): Promise<string> {
  app = new NodeApp(fixture, {
    REDIS_PORT: String(redis.port),
    STREAM: stream,
    FLUSH_MS: '60000',
    MAX_BATCH: '1000',
    MAX_ATTEMPTS: '1000',
    SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs),
  });
  const { port } = await app.json<{ port: number }>('port', 20_000);
  return `http://127.0.0.1:${port}`;
}

describe('RedisStreamSink: a backlog at SIGTERM (a real process)', () => {
  it('300 entries held back by the flush interval are all appended, and the process exits 0', async () => {
    const stream = `${RUN}-ok`;
    const url = await start(stream, 5000);
    expect((await load(url, range(0, 300).map((n) => `/job/${n}`), 10)).every((s) => s === 200)).toBe(true);
    expect(await admin.xlen(stream)).toBe(0); // still held by the flush interval

    app!.signal('SIGTERM');
    expect(await app!.exited).toEqual({ code: 0, signal: null });
    const final = await app!.json<Final>('report', 1000);
    expect(final.report).toEqual({ drained: true, undelivered: {} });
    expect(final.stats.sinks['redis-streams']).toMatchObject({ accepted: 300, delivered: 300, pending: 0, deadLettered: 0 });
    expect(await admin.xlen(stream)).toBe(300);
  }, 30_000);

  it('with Redis stopped, the shutdown ends by its deadline and reports the 300 undelivered', async () => {
    const url = await start(`${RUN}-dead`, 1000);
    expect((await load(url, range(0, 300).map((n) => `/job/${n}`), 10)).every((s) => s === 200)).toBe(true);
    await redis.stop();
    try {
      const began = Date.now();
      app!.signal('SIGTERM');
      expect(await app!.exited).toEqual({ code: 0, signal: null });
      const took = Date.now() - began;
      const final = await app!.json<Final>('report', 1000);
      expect(took).toBeLessThan(1000 + 4000); // the drain's deadline, with room for a loaded machine
      expect(final.report).toEqual({ drained: false, undelivered: { 'redis-streams': 300 } });
      expect(final.stats.sinks['redis-streams']).toMatchObject({ accepted: 300, delivered: 0, pending: 0, deadLettered: 300 });
      expect(app!.output).toMatch(/Shutdown deadline \(1000 ms\) passed with 300 items undelivered \(redis-streams: 300\)/);
    } finally {
      await redis.start();
    }
  }, 30_000);
});
