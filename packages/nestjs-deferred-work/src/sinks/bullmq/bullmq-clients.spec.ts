import { Queue } from 'bullmq';
import { createServer } from 'node:net';
import { sinkAttachContext } from '../../testing/sink-attach-context';
import { SinkConfigError } from '../kit/sink-config.error';
import { BullMqSink } from './bullmq.sink';
import type { BullMqQueueLike } from './bullmq-sink.options';

/** BullMQ 6's error for a queue given connection options without ioredis installed (redis-connection.js, loadIORedis). */
const NO_IOREDIS =
  "BullMQ could not load the optional 'ioredis' package. Install it with `npm install ioredis`, or provide a different Redis client instance " +
  '(e.g. node-redis) via the connection option. In a native ESM environment, pass an already-constructed client instance instead of connection options.';

/** A queue as BullMQ 6 leaves it without ioredis: built, its client promise rejected with `error` (the test's stand-in for the missing package). */
function queueWithout(name: string, error: Error): BullMqQueueLike {
  const client = Promise.reject(error);
  client.catch(() => undefined); // BullMQ catches it too
  return { name, addBulk: async () => [], add: async () => ({}), waitUntilReady: () => client, backend: { client } } as unknown as BullMqQueueLike;
}

describe('BullMqSink at bootstrap: a client package that is not installed', () => {
  it('fails the bootstrap naming ioredis and the command that installs it (a registered queue)', async () => {
    const sink = new BullMqSink();
    const attached = Promise.resolve().then(() => sink.attach(sinkAttachContext({ providers: { BullQueue_mail: queueWithout('mail', new Error(NO_IOREDIS)) } })));
    await expect(attached).rejects.toThrow(SinkConfigError);
    await expect(attached).rejects.toThrow(
      'BullMqSink "bullmq": the "ioredis" package is not installed. BullMQ loads it to connect queue "mail" to Redis (BullMQ 6 made ioredis an ' +
        'optional peer dependency); without it the queue can never connect and no job would be added. Install it in the app: npm install ioredis ' +
        '— or give BullMQ a client of another Redis driver (a node-redis instance) as its connection.',
    );
  });

  it('checks the queues it was given, and names the first that cannot connect', async () => {
    const sink = new BullMqSink({ name: 'jobs', queues: { audit: queueWithout('audit', new Error(NO_IOREDIS)) } });
    await expect(Promise.resolve().then(() => sink.attach(sinkAttachContext()))).rejects.toThrow(/^BullMqSink "jobs": .* queue "audit"/);
  });

  it('lets a queue pass whose client failed for another reason (a refused connection is retried at write time)', async () => {
    const sink = new BullMqSink({ queues: { mail: queueWithout('mail', new Error('connect ECONNREFUSED 127.0.0.1:6379')) } });
    await expect(Promise.resolve(sink.attach(sinkAttachContext()))).resolves.toBeUndefined();
  });

  describe('a real BullMQ queue whose Redis is down at boot', () => {
    let queue: Queue;
    beforeAll(async () => {
      // A port nothing listens on: the queue keeps reconnecting.
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      await new Promise((resolve) => server.close(resolve));
      queue = new Queue('mail', { connection: { host: '127.0.0.1', port, retryStrategy: () => 1000 } });
      queue.on('error', () => undefined);
    });
    afterAll(() => queue.close());

    it('attaches at once: a server that is down does not hold the bootstrap up, nor fail it', async () => {
      const sink = new BullMqSink();
      const started = Date.now();
      await sink.attach(sinkAttachContext({ providers: { BullQueue_mail: queue } }));
      expect(Date.now() - started).toBeLessThan(200);
    });
  });
});
