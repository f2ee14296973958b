import { Controller, Get, Header, Param, Query } from '@nestjs/common';
import { Registry } from 'prom-client';
import { AfterResponse, Deferred, type DeferredScope, type DeferredStats, DeferredWork, DeferredWorkModule } from 'nestjs-deferred-work';
import { PrometheusSink, type PrometheusSinkOptions } from 'nestjs-deferred-work/prometheus';
import { eventually } from '../support/eventually';
import { range } from '../support/load';
import { compileFixture, NodeApp } from '../support/node-app';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/** The registry the app's own /metrics route serves (set per test). */
let appRegistry: Registry;

@Controller()
class ShopController {
  @Get('orders/:id')
  @AfterResponse()
  order(@Param('id') id: string, @Query('channel') channel: string, @Deferred() work: DeferredScope) {
    work.metric('orders.created', 1, { channel });
    work.metric('order.value', Number(id));
    work.metric('cart.items', Number(id) % 5, { channel }); // a gauge: the last value set wins
    return { id };
  }

  @Get('users/:id')
  @AfterResponse()
  user(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.metric('user.visits', 1, { user: id }); // a high-cardinality label, on purpose
    return { id };
  }

  @Get('bad')
  @AfterResponse()
  bad(@Deferred() work: DeferredScope) {
    work.metric('orders.deleted', 1); // not declared
    work.metric('orders.created', 1, { channel: 'web', region: 'eu' }); // undeclared label
    work.metric('orders.created', -1, { channel: 'web' }); // a counter cannot go down
    return 'bad';
  }

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics() {
    return appRegistry.metrics();
  }
}

const declarations: PrometheusSinkOptions['metrics'] = [
  { name: 'orders.created', type: 'counter', help: 'Orders created', labelNames: ['channel'] },
  { name: 'order.value', type: 'histogram', help: 'Order value in EUR', buckets: [10, 50, 100] },
  { name: 'cart.items', type: 'gauge', help: 'Items in the last cart', labelNames: ['channel'] },
  { name: 'user.visits', type: 'counter', help: 'Visits per user', labelNames: ['user'], maxLabelSets: 5 },
];

const N = 40;

describe.each(platforms)('PrometheusSink on $name', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let work: DeferredWork;

  beforeEach(async () => {
    appRegistry = new Registry();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [new PrometheusSink({ registry: appRegistry, metrics: declarations })], flushIntervalMs: 1 })],
      controllers: [ShopController],
    });
    work = started.app.get(DeferredWork);
  });
  afterEach(() => started.close());

  const scrape = async () => {
    const res = await fetch(`${started.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    return res.text();
  };

  it('N requests → the exact counts, histogram sum and buckets, and gauge values in the app\'s /metrics', async () => {
    const ids = range(1, N + 1);
    for (const id of ids) expect((await fetch(`${started.url}/orders/${id}?channel=${id % 4 === 0 ? 'app' : 'web'}`)).status).toBe(200);
    await eventually(() => expect(work.stats().sinks.prometheus).toMatchObject({ delivered: 3 * N, pending: 0 }));
    const text = await scrape();
    expect(text).toContain('# TYPE orders_created counter\norders_created{channel="web"} 30\norders_created{channel="app"} 10\n');
    const sum = ids.reduce((a, b) => a + b, 0); // 820
    expect(text).toContain(
      `order_value_bucket{le="10"} 10\norder_value_bucket{le="50"} 40\norder_value_bucket{le="100"} 40\norder_value_bucket{le="+Inf"} 40\norder_value_sum ${sum}\norder_value_count 40\n`,
    );
    expect(text).toContain('cart_items{channel="web"} 4\ncart_items{channel="app"} 0\n'); // last: 39 % 5 and 40 % 5
    expect(work.stats()).toMatchObject({ rejected: 0, accepted: 3 * N, delivered: 3 * N });
  });

  it('an unknown name, an unknown label and a falling counter are rejected when deferred and counted in stats().rejected; nothing reaches the registry', async () => {
    expect((await fetch(`${started.url}/bad`)).status).toBe(200);
    await eventually(() => expect(work.stats().rejected).toBe(3));
    expect(work.stats().sinks.prometheus).toMatchObject({ accepted: 0, delivered: 0 });
    const text = await scrape();
    expect(text).not.toContain('orders_deleted');
    expect(text).not.toMatch(/^orders_created/m); // declared, never incremented: no sample
  });

  it('the cardinality limit holds: 8 users, maxLabelSets 5 → 5 series; users 6–8 rejected (8 twice), users 1–5 keep counting', async () => {
    for (const user of range(1, 9)) expect((await fetch(`${started.url}/users/${user}`)).status).toBe(200);
    for (const user of [1, 2, 8]) expect((await fetch(`${started.url}/users/${user}`)).status).toBe(200);
    await eventually(() => expect(work.stats()).toMatchObject({ rejected: 4, delivered: 7 }));
    const series = (await scrape()).split('\n').filter((line) => line.startsWith('user_visits{'));
    expect(series).toEqual([
      'user_visits{user="1"} 2',
      'user_visits{user="2"} 2',
      'user_visits{user="3"} 1',
      'user_visits{user="4"} 1',
      'user_visits{user="5"} 1',
    ]);
  });
});

describe.each(platforms)('PrometheusSink with @willsoto/nestjs-prometheus on $name', (platform) => {
  let app: NodeApp;
  afterEach(() => app?.kill());

  it("writes to prom-client's default registry, the one PrometheusModule serves at /metrics, reusing a counter the app registered", async () => {
    app = new NodeApp(compileFixture('willsoto-prometheus.app'), { ADAPTER: platform.name });
    const { port } = await app.json<{ port: number }>('port');
    const url = `http://127.0.0.1:${port}`;
    for (const _ of range(0, 7)) expect((await fetch(`${url}/shop/order`)).status).toBe(200);
    await eventually(async () => {
      const { stats } = (await (await fetch(`${url}/shop/stats`)).json()) as { stats: DeferredStats };
      expect(stats.sinks.prometheus).toMatchObject({ delivered: 14, pending: 0 });
    });
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain('# HELP orders_created Orders created\n# TYPE orders_created counter\norders_created{channel="web"} 7\n');
    expect(text).toContain('# HELP shop_refunds Refunds, as the app declares it\n# TYPE shop_refunds counter\nshop_refunds{reason="damaged"} 14\n');
  });
});
