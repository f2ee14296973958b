import { EventEmitter } from 'node:events';
import type { INestApplication } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GraphQLModule, Parent, Query, ResolveField, Resolver, Subscription } from '@nestjs/graphql';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { type Client, createClient } from 'graphql-ws';
import { WebSocket } from 'ws';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, DeferredWorkModule, MemorySink, type SinkItem } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection } from '../support/platforms';

/**
 * Subscriptions (Apollo on Express, `graphql-ws`): what docs/graphql-and-microservices.md says — a
 * resolver running over a WebSocket has no HTTP response to wait for, so `@Deferred()` gives it the
 * direct scope: items are dispatched at once (at subscribe, and per message), `when` does not filter,
 * no request scope is opened, and nothing stays pending or reaches another subscriber's items.
 */
const typeDefs = /* GraphQL */ `
  type Query {
    hello(id: ID!): String
  }
  type Subscription {
    orderPlaced(channel: String!, subscriber: String!): Order!
  }
  type Order {
    id: ID!
    channel: String!
    total: Int!
  }
`;

interface Order {
  id: string;
  channel: string;
}

const bus = new EventEmitter();

/**
 * The orders published on `channel`, as a subscription's iterator; `onEach` runs per message. Its
 * return() removes the listener at once (an async generator over events.on() would wait for the next
 * event first, and outlive the test).
 */
function ordersOn(channel: string, onEach: (order: Order) => void): AsyncIterableIterator<{ orderPlaced: Order }> {
  const queue: Order[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const listener = (order: Order) => {
    queue.push(order);
    wake?.();
  };
  bus.on(channel, listener);
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      while (queue.length === 0 && !done) await new Promise<void>((r) => (wake = r));
      if (done) return { done: true, value: undefined };
      const order = queue.shift()!;
      onEach(order);
      return { done: false, value: { orderPlaced: order } };
    },
    async return() {
      done = true;
      bus.off(channel, listener);
      wake?.();
      return { done: true, value: undefined };
    },
  };
}

@Resolver('Query')
class QueryResolver {
  @Query('hello')
  @AfterResponse()
  hello(@Args('id') id: string, @Deferred() work: DeferredScope) {
    work.log('info', 'hello', { id });
    return id;
  }
}

@Resolver('Subscription')
class SubscriptionResolver {
  @Subscription('orderPlaced')
  @AfterResponse()
  orderPlaced(@Args('channel') channel: string, @Args('subscriber') subscriber: string, @Deferred() work: DeferredScope) {
    work.log('info', 'subscribed', { subscriber });
    return ordersOn(channel, (order) => {
      work.log('info', 'pushed', { id: order.id, subscriber }); // per message, the same scope
      work.log('warn', 'pushed-failure', { id: order.id, subscriber }, { when: 'failure' });
    });
  }
}

@Resolver('Order')
class OrderResolver {
  /** Runs for each message a subscriber gets (the payload's fields are resolved per subscriber). */
  @ResolveField('total')
  @AfterResponse()
  total(@Parent() order: Order, @Deferred() work: DeferredScope) {
    work.metric('order.total', 10, { id: order.id });
    return 10;
  }
}

const label = (i: SinkItem) => (i as { message?: string }).message ?? (i as { name?: string }).name;
const fieldsOf = (i: SinkItem) => (i as { fields?: Record<string, unknown> }).fields ?? (i as { tags?: Record<string, unknown> }).tags;

describe('@AfterResponse() subscription resolvers (Apollo on Express, graphql-ws)', () => {
  failOnUnhandledRejection();
  let app: INestApplication;
  let sink: MemorySink;
  let work: DeferredWork;
  let port: number;
  const clients: Client[] = [];

  beforeEach(async () => {
    sink = new MemorySink();
    const moduleRef = await Test.createTestingModule({
      imports: [
        DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 1, correlation: { requestIdHeader: 'x-request-id', openTelemetry: false } }),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          typeDefs,
          graphiql: false,
          subscriptions: { 'graphql-ws': true },
          fieldResolverEnhancers: ['interceptors'],
        }),
      ],
      providers: [QueryResolver, SubscriptionResolver, OrderResolver],
    }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    work = app.get(DeferredWork);
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    // The server ended every subscription when its socket closed: none outlives its test.
    await eventually(() => expect(bus.eventNames()).toEqual([]));
    await app?.close();
  });

  /** Subscribes; `onMessage` runs as each message arrives. Resolves once the server acknowledged. */
  async function subscribe(channel: string, subscriber: string, onMessage: (order: Order) => void): Promise<{ received: Order[]; stop: () => void }> {
    const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
    clients.push(client);
    const received: Order[] = [];
    const stop = client.subscribe<{ orderPlaced: Order }>(
      { query: `subscription { orderPlaced(channel: "${channel}", subscriber: "${subscriber}") { id channel total } }` },
      {
        next: ({ data }) => {
          received.push(data!.orderPlaced);
          onMessage(data!.orderPlaced);
        },
        error: (error) => {
          throw error instanceof Error ? error : new Error(JSON.stringify(error));
        },
        complete: () => undefined,
      },
    );
    // The resolver ran (its 'subscribed' item is there) once the subscription is listening.
    await eventually(() => expect(bus.listenerCount(channel)).toBeGreaterThan(0));
    return { received, stop };
  }

  it('the direct scope: items are dispatched at once — at subscribe and per message — and `when` does not filter', async () => {
    const acceptedAtMessage: number[] = [];
    const sub = await subscribe('web', 'alice', () => acceptedAtMessage.push(work.stats().accepted));
    // At subscribe: dispatched with no HTTP response to wait for.
    await sink.waitFor(1);
    expect(sink.items.map(label)).toEqual(['subscribed']);

    for (const [n, id] of ['o1', 'o2', 'o3'].entries()) {
      bus.emit('web', { id, channel: 'web' });
      await eventually(() => expect(sub.received).toHaveLength(n + 1));
    }
    expect(sub.received.map((o) => o.id)).toEqual(['o1', 'o2', 'o3']);
    // When the client got message n, that message's 3 items (pushed, pushed-failure, order.total) were
    // already in the dispatcher: nothing waited for the message to be sent.
    expect(acceptedAtMessage).toEqual([4, 7, 10]);
    await sink.waitFor(10);
    const perMessage = sink.items.slice(1).map((i) => `${label(i)}:${fieldsOf(i)?.id}`);
    expect(perMessage.sort()).toEqual(
      ['o1', 'o2', 'o3'].flatMap((id) => [`order.total:${id}`, `pushed-failure:${id}`, `pushed:${id}`]).sort(),
    );
    // No request scope was opened for the WebSocket, nothing was judged (skipped) or left pending.
    await eventually(() => expect(work.stats()).toMatchObject({ accepted: 10, delivered: 10, pending: 0, skipped: 0 }));
    expect(work.stats().requests).toMatchObject({ finished: 0, aborted: 0, open: 0 });
  });

  it('two subscribers and a concurrent HTTP query: each item belongs to its own subscriber, none carries the HTTP request id; after unsubscribing nothing is pending or listening', async () => {
    const a = await subscribe('web', 'alice', () => undefined);
    const b = await subscribe('app', 'bob', () => undefined);
    await sink.waitFor(2);
    const http = fetch(`http://127.0.0.1:${port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'h1' },
      body: JSON.stringify({ query: '{ hello(id: "h1") }' }),
    });
    bus.emit('web', { id: 'a1', channel: 'web' });
    bus.emit('app', { id: 'b1', channel: 'app' });
    bus.emit('web', { id: 'a2', channel: 'web' });
    expect(((await (await http).json()) as { data: unknown }).data).toEqual({ hello: 'h1' });
    await eventually(() => {
      expect(a.received.map((o) => o.id)).toEqual(['a1', 'a2']);
      expect(b.received.map((o) => o.id)).toEqual(['b1']);
    });
    await sink.waitFor(2 + 3 * 3 + 1);
    const pushed = sink.items.filter((i) => label(i) === 'pushed').map((i) => `${fieldsOf(i)?.subscriber}:${fieldsOf(i)?.id}`);
    expect(pushed.sort()).toEqual(['alice:a1', 'alice:a2', 'bob:b1']);
    const totals = sink.items.filter((i) => label(i) === 'order.total').map((i) => fieldsOf(i)?.id);
    expect(totals.sort()).toEqual(['a1', 'a2', 'b1']);
    // Only the HTTP query's item carries its request id; the subscriptions' items none.
    for (const item of sink.items) expect(item.correlation?.requestId).toBe(label(item) === 'hello' ? 'h1' : undefined);
    expect(sink.items.filter((i) => label(i) === 'hello')).toHaveLength(1);

    a.stop();
    b.stop();
    await eventually(() => expect(bus.listenerCount('web') + bus.listenerCount('app')).toBe(0));
    await eventually(() => expect(work.stats()).toMatchObject({ accepted: 12, delivered: 12, pending: 0, skipped: 0 }));
    expect(work.stats().requests).toMatchObject({ finished: 1, open: 0 }); // the HTTP query only
  });
});
