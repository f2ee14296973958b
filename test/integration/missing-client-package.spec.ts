import { createRequire } from 'node:module';
import { join } from 'node:path';
import { freePort } from '../support/free-port';
import { type AppRun, appRun, type InstalledApp, installedApp } from '../support/installed-app';
import { NodeApp } from '../support/node-app';
import { RedisServer } from '../support/redis-server';

/**
 * A client package the app never installed, against what is merely down, in real processes: a Nest 12
 * app installed with npm into a directory of its own (BullMQ 6, whose `ioredis` is an optional peer;
 * the built library copied in as an installed package), once without `ioredis` and once with it.
 * Without it, BullMQ builds the queue anyway and Nest 12's Redis transport loads it only when it first
 * connects: the bootstrap must fail, naming the package and the command that installs it. With it and
 * Redis down at boot, the app must start and deliver once Redis is up.
 *
 * The two installs are cached (test/support/installed-app.ts): the first run installs from the
 * registry, later runs reuse them.
 */
const NEST_12 = {
  '@nestjs/common': '^12.0.0',
  '@nestjs/core': '^12.0.0',
  '@nestjs/platform-express': '^12.0.0',
  '@nestjs/bullmq': '^12.0.0',
  '@nestjs/microservices': '^12.0.0',
  bullmq: '^6.0.0',
  'reflect-metadata': '^0.2.0',
  rxjs: '^7.8.0',
};

let without: InstalledApp;
let withIoredis: InstalledApp;
const runs: AppRun[] = [];
const apps: NodeApp[] = [];
let redis: RedisServer | undefined;
/** The apps whose bootstrap must fail, started together (each takes a few seconds to load Nest). */
let failing: { bullmq: NodeApp; bullmqClosed: NodeApp; offloaded: NodeApp; transport: NodeApp };

beforeAll(async () => {
  [without, withIoredis] = await Promise.all([installedApp('bullmq6-no-ioredis', NEST_12), installedApp('bullmq6-ioredis', { ...NEST_12, ioredis: '^5.0.0' })]);
  const down = String(await freePort()); // nothing listens there: the apps must fail before connecting anyway
  failing = {
    bullmq: start(without, { REDIS_PORT: down }),
    bullmqClosed: start(without, { REDIS_PORT: down, ON_FAILURE: 'close' }),
    offloaded: start(without, { SINK: 'bullmq-offloaded', REDIS_PORT: down }),
    transport: start(without, { SINK: 'redis-transport', REDIS_PORT: down }),
  };
}, 300_000);
afterAll(async () => {
  for (const app of apps) app.kill();
  for (const run of runs) run.dispose();
  await redis?.dispose();
});

function start(installed: InstalledApp, env: Record<string, string>): NodeApp {
  const run = appRun(installed, 'missing-client.app');
  runs.push(run);
  const app = new NodeApp(run.main, env);
  apps.push(app);
  return app;
}

/** The exit of an app that must end by itself within `ms`. */
async function exitWithin(app: NodeApp, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the app did not exit within ${ms} ms. Its output:\n${app.output}`)), ms);
  });
  try {
    return await Promise.race([app.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a client package that is not installed (BullMQ 6, Nest 12, real processes)', () => {
  it('the app was installed without ioredis, and BullMQ 6 cannot find it', () => {
    expect(without.versions.bullmq).toMatch(/^6\./);
    expect(() => createRequire(join(without.dir, 'node_modules/bullmq/package.json')).resolve('ioredis')).toThrow(/Cannot find module 'ioredis'/);
  });

  it('BullMqSink: the bootstrap fails with one error naming ioredis and "npm install ioredis"', async () => {
    const app = failing.bullmq;
    const { code } = await exitWithin(app, 30_000);
    expect(code).toBe(1);
    expect(app.output).toContain('SinkConfigError: BullMqSink "bullmq": the "ioredis" package is not installed.');
    expect(app.output).toContain('Install it in the app: npm install ioredis');
    expect(app.output.match(/SinkConfigError: /g)).toHaveLength(1); // one error (BullMQ logs its own load error besides)
    expect(app.output).not.toMatch(/Redis is not connected|TypeError/);
  });

  it("BullMqSink: app.close() after the failed bootstrap resolves; the queue's failing close is a warning", async () => {
    const app = failing.bullmqClosed;
    const { bootstrapError } = await app.json<{ bootstrapError: { name: string; message: string } }>('bootstrapError', 30_000);
    expect(bootstrapError.name).toBe('SinkConfigError');
    expect(bootstrapError.message).toMatch(/^BullMqSink "bullmq": the "ioredis" package is not installed\. BullMQ loads it to connect queue "mail" to Redis/);
    expect(await app.json('closed', 10_000)).toEqual({ closed: true });
    expect((await exitWithin(app, 10_000)).code).toBe(3);
    // BullMQ 6's own close() throws for a queue without a client; the sink reports it instead of failing app.close().
    expect(app.output).toMatch(/Queue\.onApplicationShutdown\(\) failed after the deferred work drained, and the shutdown goes on: Cannot read properties of undefined/);
    expect(app.output).not.toContain('closeError');
  });

  it('BullMqSink.offloaded(): the worker thread cannot build its sink, and the bootstrap fails naming ioredis', async () => {
    const app = failing.offloaded;
    const { code } = await exitWithin(app, 30_000);
    expect(code).toBe(1);
    expect(app.output).toMatch(/SinkConfigError: OffloadedSink "bullmq": the worker thread could not build its sink from .*: BullMqSink "bullmq": the "ioredis" package is not installed\./);
    expect(app.output).toContain('Install it in the app: npm install ioredis');
  });

  it("ClientProxySink on Nest 12's Redis transport: the bootstrap fails naming ioredis, instead of the process exiting at the first message", async () => {
    const app = failing.transport;
    const { code } = await exitWithin(app, 30_000);
    expect(code).toBe(1);
    expect(app.output).toContain('SinkConfigError: ClientProxySink "events": the "ioredis" package is not installed. The app\'s ClientRedis');
    expect(app.output).toContain('Install it in the app: npm install ioredis');
  });

  it('with ioredis, Redis down at boot: the app starts, the job is delivered once Redis is up, and the shutdown throws nothing', async () => {
    const port = await freePort();
    const prefix = `dw-missing-${process.pid}`;
    const app = start(withIoredis, { REDIS_PORT: String(port), PREFIX: prefix });
    const url = `http://127.0.0.1:${(await app.json<{ port: number }>('port', 20_000)).port}`;
    expect((await fetch(`${url}/jobs/1`, { method: 'POST' })).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 700)); // a first write meets Redis down
    const before = (await (await fetch(`${url}/stats`)).json()) as { sinks: Record<string, { delivered: number; deadLettered: number }> };
    expect(before.sinks.bullmq).toMatchObject({ delivered: 0, deadLettered: 0 });

    redis = new RedisServer();
    redis.port = port; // the port the app connects to
    await redis.start();
    const deadline = Date.now() + 20_000;
    let delivered = 0;
    while (delivered === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      delivered = ((await (await fetch(`${url}/stats`)).json()) as { sinks: Record<string, { delivered: number }> }).sinks.bullmq.delivered;
    }
    expect(delivered).toBe(1);
    expect(await redis.command('HGET', `${prefix}:mail:welcome-1`, 'name')).toBe('$7\r\nwelcome');

    app.signal('SIGTERM');
    expect(await app.json('closed', 10_000)).toEqual({ closed: true });
    expect((await exitWithin(app, 10_000)).code).toBe(0);
    expect(app.output).not.toMatch(/TypeError|SinkConfigError|failed after the deferred work drained/);
  });
});
