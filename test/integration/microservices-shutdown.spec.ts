import { createRequire } from 'node:module';
import { compileFixture, NodeApp } from '../support/node-app';
import { requireBroker, TcpProxy } from '../support/tcp-proxy';

/**
 * Backlog at shutdown for the broker sink, as a real process (test/fixtures/broker-shutdown.app.ts):
 * 300 events held back by a long linger, for a RabbitMQ client nothing has connected yet, then
 * SIGTERM. The app reaches RabbitMQ through a TCP proxy, so the test can cut it without touching the
 * shared broker.
 */
/** amqplib ships no types (and @types/amqplib is not installed): the little this test uses of it. */
interface AmqpChannel {
  get(queue: string, options: { noAck: boolean }): Promise<false | { properties: { messageId?: string } }>;
  deleteQueue(queue: string): Promise<unknown>;
}
const amqp = createRequire(import.meta.url)('amqplib') as {
  connect(url: string): Promise<{ createChannel(): Promise<AmqpChannel>; close(): Promise<void> }>;
};
const RUN = `dw-ms-shutdown-${process.pid}-${Date.now().toString(36)}`;
let app: NodeApp | undefined;
let proxy: TcpProxy;
let file: string;

interface Final {
  report: { drained: boolean; undelivered: Record<string, number> };
  stats: { accepted: number; delivered: number; pending: number; deadLettered: number };
}

beforeAll(async () => {
  await requireBroker('RabbitMQ', 5672, 'start RabbitMQ (rabbitmq-server -detached; guest/guest on 127.0.0.1:5672).');
  file = compileFixture('broker-shutdown.app');
  proxy = new TcpProxy(5672);
  await proxy.listen();
});
afterEach(async () => {
  app?.kill();
  await proxy.start();
});
afterAll(() => proxy.close());

async function start(queue: string, shutdownTimeoutMs: number): Promise<{ app: NodeApp; url: string }> {
  const started = new NodeApp(file, { RMQ_PORT: String(proxy.port), QUEUE: queue, SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) });
  const { port } = await started.json<{ port: number }>('port');
  return { app: started, url: `http://127.0.0.1:${port}` };
}

async function send(url: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += 30) {
    const batch = Array.from({ length: Math.min(30, count - i) }, (_, j) => fetch(`${url}/event/${i + j}`).then((r) => r.status));
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
}

/** The messages in `queue`, read straight from RabbitMQ (then the queue is deleted). */
async function drainQueue(queue: string): Promise<string[]> {
  const connection = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  try {
    const channel = await connection.createChannel();
    const ids: string[] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (!message) break;
      ids.push(String(message.properties.messageId));
    }
    await channel.deleteQueue(queue);
    return ids;
  } finally {
    await connection.close();
  }
}

describe('ClientProxySink (RabbitMQ): backlog at SIGTERM (a real process)', () => {
  it('300 held events are all confirmed by RabbitMQ before the process exits 0', async () => {
    const queue = `${RUN}-ok`;
    const started = await start(queue, 5000);
    app = started.app;
    expect((await send(started.url, 300)).every((s) => s === 200)).toBe(true);

    app.signal('SIGTERM');
    const exit = await app.exited;
    const final = await app.json<Final>('report', 1000);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(final.report).toEqual({ drained: true, undelivered: {} });
    expect(final.stats).toMatchObject({ accepted: 300, delivered: 300, pending: 0, deadLettered: 0 });
    expect(app.output).not.toMatch(/is closed|dead-lettered/);
    const ids = await drainQueue(queue);
    expect(ids.length).toBe(300);
    expect(new Set(ids).size).toBe(300);
    expect(ids).toContain('event-299');
  }, 30_000);

  it('with the broker unreachable, it ends by its deadline and reports the undelivered count', async () => {
    const started = await start(`${RUN}-dead`, 1000);
    app = started.app;
    expect((await send(started.url, 300)).every((s) => s === 200)).toBe(true);
    await proxy.stop();

    const began = Date.now();
    app.signal('SIGTERM');
    const exit = await app.exited;
    const took = Date.now() - began;
    const final = await app.json<Final>('report', 1000);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(took).toBeLessThan(1000 + 3000);
    expect(final.report).toEqual({ drained: false, undelivered: { EVENTS: 300 } });
    expect(final.stats).toMatchObject({ accepted: 300, delivered: 0, pending: 0, deadLettered: 300 });
    expect(app.output).toMatch(/Shutdown deadline \(1000 ms\) passed with 300 items undelivered \(EVENTS: 300\)/);
  }, 30_000);
});
