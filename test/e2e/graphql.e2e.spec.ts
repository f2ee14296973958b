import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GraphQLModule, Info, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  DeferredWork,
  DeferredWorkModule,
  type DeferredWorkModuleOptions,
  MemorySink,
  type SinkItem,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { RecordingSink } from '../support/recording.sink';
import { failOnUnhandledRejection } from '../support/platforms';

/**
 * @AfterResponse() resolvers on the three GraphQL servers Nest ships drivers for — Apollo on Express,
 * Apollo on Fastify, Mercurius on Fastify — each with Nest's default GraphQL context (no context factory):
 * the library finds the HTTP response itself.
 */
const typeDefs = /* GraphQL */ `
  type Query {
    order(id: ID!): Order!
    boom(id: ID!): String
    slow: String
    many(count: Int!): [Item!]!
    plain: String
  }
  type Mutation {
    place(id: ID!): String
  }
  type Order {
    id: ID!
    total: Int!
    broken: Int
  }
  type Item {
    n: Int!
  }
`;

const moments = { slowResolvedAt: 0 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

@Resolver('Query')
class QueryResolver {
  @Query('order')
  @AfterResponse()
  async order(@Args('id') id: string, @Deferred() work: DeferredScope) {
    await sleep(Number(id.replace(/\D/g, '') || 0) % 7); // interleave concurrent requests
    work.job('mail', 'confirm', { id });
    work.log('info', 'order', { id });
    return { id };
  }

  @Query('boom')
  @AfterResponse()
  boom(@Args('id') id: string, @Deferred() work: DeferredScope) {
    work.log('error', 'boom-always', { id });
    work.job('mail', 'boom-success', { id });
    work.log('warn', 'boom-failure', { id }, { when: 'failure' });
    throw new Error('boom');
  }

  @Query('slow')
  async slow() {
    await sleep(120);
    moments.slowResolvedAt = performance.now();
    return 'slow';
  }

  @Query('many')
  many(@Args('count') count: number) {
    return Array.from({ length: count }, (_, n) => ({ n }));
  }

  @Query('plain')
  plain(@Deferred() work: DeferredScope) {
    work.log('info', 'undecorated resolver');
    return 'plain';
  }
}

@Resolver('Mutation')
@AfterResponse({ when: { log: 'success' } })
class MutationResolver {
  @Mutation('place')
  place(@Args('id') id: string, @Deferred() work: DeferredScope) {
    work.log('info', 'placed', { id });
    return id;
  }
}

@Resolver('Order')
class OrderResolver {
  @ResolveField('total')
  @AfterResponse()
  total(@Parent() order: { id: string }, @Deferred() work: DeferredScope) {
    work.metric('order.total', 10, { id: order.id });
    return 10;
  }

  @ResolveField('broken')
  @AfterResponse()
  broken(@Parent() order: { id: string }, @Deferred() work: DeferredScope) {
    work.log('info', 'broken-success', { id: order.id }, { when: 'success' });
    work.log('info', 'broken-failure', { id: order.id }, { when: 'failure' });
    throw new Error('broken field');
  }
}

@Resolver('Item')
class ItemResolver {
  @ResolveField('n')
  @AfterResponse()
  n(@Parent() item: { n: number }, @Deferred() work: DeferredScope, @Info() info: { path: { key: unknown } }) {
    work.metric('item', item.n, { path: String(info.path.key) });
    return item.n;
  }
}

interface Server {
  name: string;
  adapter: () => ExpressAdapter | FastifyAdapter;
  graphql: (fieldResolverEnhancers: Array<'interceptors'>) => ReturnType<typeof GraphQLModule.forRoot>;
}

const servers: Server[] = [
  {
    name: 'Apollo on Express',
    adapter: () => new ExpressAdapter(),
    graphql: (fieldResolverEnhancers) => GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs, graphiql: false, fieldResolverEnhancers }),
  },
  {
    name: 'Apollo on Fastify',
    adapter: () => new FastifyAdapter(),
    graphql: (fieldResolverEnhancers) => GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs, graphiql: false, fieldResolverEnhancers }),
  },
];

interface Started {
  app: INestApplication;
  url: string;
  work: DeferredWork;
}

/** Starts the app; field resolvers run Nest's interceptors (so their own errors count) unless `enhancers` is empty. */
async function start(
  server: Server,
  sinks: DeferredWorkModuleOptions['sinks'],
  options: Partial<DeferredWorkModuleOptions> = {},
  enhancers: Array<'interceptors'> = ['interceptors'],
): Promise<Started> {
  const metadata: ModuleMetadata = {
    imports: [DeferredWorkModule.forRoot({ sinks, flushIntervalMs: 1, ...options }), server.graphql(enhancers)],
    providers: [QueryResolver, MutationResolver, OrderResolver, ItemResolver],
  };
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication(server.adapter() as never, { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}/graphql`, work: app.get(DeferredWork) };
}

async function gql(url: string, query: string, headers: Record<string, string> = {}): Promise<{ status: number; body: { data?: unknown; errors?: Array<{ path?: unknown[] }> } }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
  return { status: res.status, body: (await res.json()) as never };
}

const label = (i: SinkItem) => (i as { message?: string }).message ?? (i as { name?: string }).name;

describe.each(servers)('@AfterResponse() resolvers on $name', (server) => {
  failOnUnhandledRejection();
  let started: Started;
  let sink: MemorySink;

  afterEach(() => started?.app.close());

  describe('with a memory sink', () => {
    beforeEach(async () => {
      sink = new MemorySink();
      started = await start(server, [sink], { correlation: { requestIdHeader: 'x-request-id', openTelemetry: false } });
    });

    it('a query and its field resolvers defer into one scope; success items run after the response', async () => {
      const { status, body } = await gql(started.url, '{ order(id: "a1") { id total } }');
      expect(status).toBe(200);
      expect(body).toEqual({ data: { order: { id: 'a1', total: 10 } } });
      await sink.waitFor(3);
      expect(sink.items.map(label).sort()).toEqual(['confirm', 'order', 'order.total']);
      await eventually(() => expect(started.work.stats().requests).toMatchObject({ finished: 1, aborted: 0, open: 0 }));
    });

    it('a resolver that throws: its failure/always items run, its success items do not — the HTTP status is 200', async () => {
      const { status, body } = await gql(started.url, '{ boom(id: "b1") }');
      expect(status).toBe(200);
      expect(body.errors?.[0]?.path).toEqual(['boom']);
      await sink.waitFor(2);
      await eventually(() => expect(started.work.stats().skipped).toBe(1));
      expect(sink.items.map(label).sort()).toEqual(['boom-always', 'boom-failure']);
    });

    it("a failing field fails its own items and its parent's, not its siblings' in other branches", async () => {
      const { body } = await gql(started.url, '{ order(id: "c1") { id broken } plainOrder: order(id: "c2") { id total } }');
      expect(body.errors?.map((e) => e.path)).toEqual([['order', 'broken']]);
      // c1: the query's job (success) is skipped, its log (always) runs; broken: failure only. c2: all run.
      await sink.waitFor(5);
      await eventually(() => expect(started.work.stats().skipped).toBe(2));
      const got = sink.items.map((i) => `${label(i)}:${JSON.stringify((i as { fields?: unknown; data?: unknown; tags?: unknown }).fields ?? (i as { data?: unknown }).data ?? (i as { tags?: unknown }).tags)}`);
      expect(got.sort()).toEqual(['broken-failure:{"id":"c1"}', 'confirm:{"id":"c2"}', 'order.total:{"id":"c2"}', 'order:{"id":"c1"}', 'order:{"id":"c2"}']);
    });

    it('a class-level @AfterResponse() on a mutation resolver applies its when', async () => {
      const { body } = await gql(started.url, 'mutation { place(id: "m1") }');
      expect(body).toEqual({ data: { place: 'm1' } });
      await sink.waitFor(1);
      expect(sink.items.map(label)).toEqual(['placed']);
    });

    it('a query resolving 50 fields defers into one scope, released as one batch', async () => {
      const { body } = await gql(started.url, '{ many(count: 50) { n } }');
      expect((body.data as { many: unknown[] }).many).toHaveLength(50);
      await sink.waitFor(50);
      expect(started.work.stats().requests).toMatchObject({ finished: 1, open: 0 });
      expect(sink.batchSizes).toEqual([50]);
    });

    it('an undecorated resolver: @Deferred() items go straight to the dispatcher', async () => {
      const { body } = await gql(started.url, '{ plain }');
      expect(body).toEqual({ data: { plain: 'plain' } });
      await sink.waitFor(1);
      expect(started.work.stats().requests.finished).toBe(0);
    });

    it('200 concurrent queries: every item lands with its own request id', async () => {
      const ids = Array.from({ length: 200 }, (_, i) => `r${i}`);
      const results = await Promise.all(ids.map((id) => gql(started.url, `{ order(id: "${id}") { id total } }`, { 'x-request-id': id })));
      expect(results.every((r) => r.status === 200)).toBe(true);
      await sink.waitFor(600, 10_000);
      for (const item of sink.items) {
        const id = (item as { data?: { id: string } }).data?.id ?? (item as { fields?: { id: string } }).fields?.id ?? (item as { tags?: { id: string } }).tags?.id;
        expect(item.correlation).toEqual({ requestId: id });
      }
      expect(new Set(sink.items.map((i) => i.correlation?.requestId)).size).toBe(200);
      await eventually(() => expect(started.work.stats().requests).toMatchObject({ finished: 200, open: 0 }));
    });
  });

  describe("without fieldResolverEnhancers: ['interceptors']", () => {
    beforeEach(async () => {
      sink = new MemorySink();
      started = await start(server, [sink], {}, []);
    });

    it("field resolvers' items still wait for the response, in the request's one scope; a field's own error is not seen", async () => {
      const { body } = await gql(started.url, '{ order(id: "f1") { id total broken } }');
      expect(body.errors?.map((e) => e.path)).toEqual([['order', 'broken']]);
      await sink.waitFor(4);
      await eventually(() => expect(started.work.stats().skipped).toBe(1));
      expect(started.work.stats().requests).toMatchObject({ finished: 1, open: 0 });
      // Nest ran no interceptor for `broken`: its call is judged by the HTTP outcome (a 200), not its error.
      expect(sink.items.map(label).sort()).toEqual(['broken-success', 'confirm', 'order', 'order.total']);
    });
  });

  describe('with a blocking sink', () => {
    let recording: RecordingSink;

    beforeEach(async () => {
      recording = new RecordingSink();
      started = await start(server, [recording], { flushIntervalMs: 0 });
    });

    it('work starts after the whole response, not when the resolver returned', async () => {
      let release!: () => void;
      recording.gate = new Promise((r) => (release = r));
      const { body } = await gql(started.url, '{ order(id: "s1") { id } slow }');
      const receivedAt = performance.now();
      expect(body).toEqual({ data: { order: { id: 's1' }, slow: 'slow' } });
      expect(recording.writes.length).toBeLessThanOrEqual(1); // still blocked, or not called yet
      release();
      await eventually(() => expect(recording.items).toHaveLength(2));
      const calledAt = recording.writes[0].at;
      expect(calledAt).toBeGreaterThan(moments.slowResolvedAt); // a tap() would have written ~120 ms earlier
      expect(receivedAt).toBeGreaterThan(moments.slowResolvedAt);
    });
  });
});
