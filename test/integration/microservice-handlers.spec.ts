import { Controller, Get, type INestApplication, type INestMicroservice, Param } from '@nestjs/common';
import { ClientProxyFactory, EventPattern, MessagePattern, Payload, RpcException, Transport, type ClientProxy } from '@nestjs/microservices';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, MemorySink, type SinkItem } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { NatsServer } from '../support/nats-server';
import { failOnUnhandledRejection } from '../support/platforms';

/**
 * @AfterResponse() on @MessagePattern / @EventPattern handlers over real transports — TCP, and NATS
 * (a private nats-server on a free port) — and in a hybrid app (HTTP + microservice, one process).
 * "The reply was sent" is observed where the transport takes it: the server's serializer records each
 * reply it was handed; each handler's run() callback reads that record when it runs.
 */
const replies = new Set<string>();
/** The dispatcher's `accepted` count at the moment each reply was handed to the transport. */
const acceptedAtReply = new Map<string, number>();
let accepted: () => number = () => -1;
const noteReply = (response: unknown) => {
  if (typeof response !== 'string') return;
  replies.add(response);
  acceptedAtReply.set(response, accepted());
};
const seenByCallback = new Map<string, boolean>();
const moments = { eventHandlerDoneAt: 0 };

/** Records the replies the server hands its transport (TCP writes what the serializer returns as JSON). */
const tcpSerializer = {
  serialize(packet: { response?: unknown; isDisposed?: boolean }) {
    noteReply(packet.response);
    return packet;
  },
};
/** The same for NATS, in the form its server publishes (`data` as JSON, as Nest's own NATS serializer sends a plain reply). */
const natsSerializer = {
  serialize(packet: { response?: unknown }) {
    noteReply(packet.response);
    return { data: JSON.stringify(packet), headers: undefined };
  },
};

@Controller()
class Handlers {
  @MessagePattern('echo')
  @AfterResponse()
  echo(@Payload() data: { id: string }, @Deferred() work: DeferredScope) {
    work.run(() => void seenByCallback.set(data.id, replies.has(data.id)), { when: 'always' });
    work.log('info', 'echoed', { id: data.id });
    work.job('mail', 'echo-success', { id: data.id });
    return data.id; // the reply is the id itself
  }

  @MessagePattern('fail')
  @AfterResponse()
  async fail(@Payload() data: { id: string }, @Deferred() work: DeferredScope) {
    work.log('error', 'fail-always', { id: data.id });
    work.log('warn', 'fail-failure', { id: data.id }, { when: 'failure' });
    work.job('mail', 'fail-success', { id: data.id });
    await new Promise((r) => setTimeout(r, 5));
    throw new RpcException('nope');
  }

  @EventPattern('happened')
  @AfterResponse()
  async happened(@Payload() data: { id: string }, @Deferred() deferred: unknown) {
    // Nest 12 types an @EventPattern handler's parameters after the payload as unknown.
    const work = deferred as DeferredScope;
    work.log('info', 'event', { id: data.id });
    await new Promise((r) => setTimeout(r, 60));
    moments.eventHandlerDoneAt = performance.now();
  }

  @MessagePattern('plain')
  plain(@Payload() data: { id: string }, @Deferred() work: DeferredScope) {
    work.log('info', 'undecorated', { id: data.id });
    return data.id;
  }

  @Get('http/:id')
  @AfterResponse()
  http(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.log('info', 'http', { id });
    return { id };
  }
}

interface Transported {
  name: string;
  before?: () => Promise<void>;
  after?: () => Promise<void>;
  /** Server options (with the recording serializer) and client options. */
  server: () => Record<string, unknown>;
  client: () => Record<string, unknown>;
  transport: Transport;
}

const nats = new NatsServer();
let tcpPort = 0;
const transports: Transported[] = [
  {
    name: 'TCP',
    transport: Transport.TCP,
    server: () => ({ host: '127.0.0.1', port: tcpPort, serializer: tcpSerializer }),
    client: () => ({ host: '127.0.0.1', port: tcpPort }),
  },
  {
    name: 'NATS',
    transport: Transport.NATS,
    before: () => nats.start(),
    after: () => nats.stop(),
    server: () => ({ servers: [nats.url], serializer: natsSerializer }),
    client: () => ({ servers: [nats.url] }),
  },
];

const label = (i: SinkItem) => (i as { message?: string }).message ?? (i as { name?: string }).name;
const idOf = (i: SinkItem) => ((i as { fields?: { id?: string } }).fields ?? (i as { data?: { id?: string } }).data)?.id;

async function freeTcpPort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe.each(transports)('@AfterResponse() microservice handlers over $name', (t) => {
  failOnUnhandledRejection();
  let ms: INestMicroservice;
  let client: ClientProxy;
  let sink: MemorySink;
  let work: DeferredWork;

  beforeAll(async () => {
    await t.before?.();
  });
  afterAll(async () => {
    await t.after?.();
  });

  beforeEach(async () => {
    tcpPort = await freeTcpPort();
    sink = new MemorySink();
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1 })],
      controllers: [Handlers],
    }).compile();
    ms = moduleRef.createNestMicroservice({ transport: t.transport, options: t.server() } as never);
    ms.useLogger(false);
    await ms.listen();
    work = ms.get(DeferredWork);
    accepted = () => work.stats().accepted;
    client = ClientProxyFactory.create({ transport: t.transport, options: t.client() } as never) as unknown as ClientProxy;
    await client.connect();
  });
  afterEach(async () => {
    await client.close();
    await ms.close();
  });

  it('request-response: the reply was handed to the transport before any item ran; the client got it', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `${t.name}-e${i}`);
    const got = await Promise.all(ids.map((id) => firstValueFrom(client.send<string>('echo', { id }))));
    expect(got).toEqual(ids);
    await eventually(() => expect(ids.filter((id) => !seenByCallback.has(id))).toEqual([]));
    expect(ids.filter((id) => seenByCallback.get(id) !== true)).toEqual([]);
    await sink.waitFor(100);
    expect(sink.items.filter((i) => label(i) === 'echoed').map(idOf).sort()).toEqual([...ids].sort());
    await eventually(() => expect(work.stats().requests).toMatchObject({ finished: 50, open: 0 }));
  });

  it('no item of a message reaches the dispatcher before its reply was handed to the transport', async () => {
    for (let i = 0; i < 5; i++) {
      const id = `${t.name}-s${i}`;
      const before = work.stats().accepted;
      expect(await firstValueFrom(client.send<string>('echo', { id }))).toBe(id);
      expect(acceptedAtReply.get(id)).toBe(before); // a release at the handler's return would have counted 3 more
      await eventually(() => expect(work.stats().accepted).toBe(before + 3)); // log, job, run()
    }
  });

  it('a throwing handler: the client gets the error, then failure and always items run, success items do not', async () => {
    const id = `${t.name}-f1`;
    await expect(firstValueFrom(client.send('fail', { id }))).rejects.toMatchObject({ message: 'nope' });
    await sink.waitFor(2);
    await eventually(() => expect(work.stats().skipped).toBe(1));
    expect(sink.items.map(label).sort()).toEqual(['fail-always', 'fail-failure']);
  });

  it('an event: items run once the handler finished', async () => {
    const id = `${t.name}-v1`;
    await firstValueFrom(client.emit('happened', { id }));
    await sink.waitFor(1);
    expect(sink.items.map(label)).toEqual(['event']);
    expect(moments.eventHandlerDoneAt).toBeGreaterThan(0);
    expect(work.stats().requests).toMatchObject({ finished: 1, open: 0 });
  });

  it('an undecorated handler: @Deferred() items go straight to the dispatcher', async () => {
    expect(await firstValueFrom(client.send('plain', { id: 'p' }))).toBe('p');
    await sink.waitFor(1);
    expect(work.stats().requests.finished).toBe(0);
  });
});

describe('hybrid app (HTTP on Fastify + a TCP microservice): one dispatcher', () => {
  failOnUnhandledRejection();
  let app: INestApplication;
  let client: ClientProxy;
  let sink: MemorySink;

  beforeAll(async () => {
    tcpPort = await freeTcpPort();
    sink = new MemorySink();
    const moduleRef = await Test.createTestingModule({
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1 })],
      controllers: [Handlers],
    }).compile();
    app = moduleRef.createNestApplication(new FastifyAdapter() as never, { logger: false });
    app.connectMicroservice({ transport: Transport.TCP, options: { host: '127.0.0.1', port: tcpPort, serializer: tcpSerializer } }, { inheritAppConfig: true });
    await app.startAllMicroservices();
    await app.listen(0, '127.0.0.1');
    client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port: tcpPort } } as never) as unknown as ClientProxy;
    await client.connect();
  });
  afterAll(async () => {
    await client.close();
    await app.close();
  });

  it('HTTP requests and messages defer into the same dispatcher and sink', async () => {
    const { port } = app.getHttpServer().address() as { port: number };
    const [res, reply] = await Promise.all([fetch(`http://127.0.0.1:${port}/http/h1`), firstValueFrom(client.send<string>('echo', { id: 'hy1' }))]);
    expect(res.status).toBe(200);
    expect(reply).toBe('hy1');
    await sink.waitFor(3); // http's log; echo's log and job (its run() is a callback, not a sink item)
    expect(sink.items.map(label).sort()).toEqual(['echo-success', 'echoed', 'http']);
    const stats = app.get(DeferredWork).stats();
    expect(stats.requests).toMatchObject({ finished: 2, open: 0 });
    expect(seenByCallback.get('hy1')).toBe(true);
  });
});
