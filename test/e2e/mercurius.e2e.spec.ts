import type { DeferredStats, SinkItem } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { compileFixture, NodeApp } from '../support/node-app';

/**
 * @AfterResponse() resolvers on Mercurius (`@nestjs/mercurius`' MercuriusDriver on Fastify, Nest's
 * default GraphQL context). The app runs as a process of its own (test/fixtures/mercurius-graphql.app.ts,
 * against the built dist): Jest on Node 20 cannot load Mercurius, whose `@fastify/static` requires an
 * ES-module-only package. The library finds the HTTP response through the Fastify `reply` Mercurius puts
 * on the context.
 */
interface Report {
  stats: DeferredStats;
  writes: Array<{ at: number; items: SinkItem[] }>;
  slowResolvedAt: number;
  probes: Record<string, { status: number; acceptedAtFinish: number; sinkItemsAtFinish: number; finishedAt: number }>;
}

type Body = { data?: unknown; errors?: Array<{ path?: unknown[]; message: string }> };

const label = (i: SinkItem) => (i as { message?: string }).message ?? (i as { name?: string }).name;
const idOf = (i: SinkItem) =>
  ((i as { data?: { id: string } }).data ?? (i as { fields?: { id: string } }).fields ?? (i as { tags?: { id: string } }).tags)?.id;

describe('@AfterResponse() resolvers on Mercurius on Fastify (a child process)', () => {
  let file: string;
  let app: NodeApp;
  let url: string;

  beforeAll(() => {
    file = compileFixture('mercurius-graphql.app');
  });
  beforeEach(async () => {
    app = new NodeApp(file, {});
    const { port } = await app.json<{ port: number }>('port', 30_000);
    url = `http://127.0.0.1:${port}`;
  }, 40_000);
  afterEach(() => app?.kill());

  const gql = async (query: string, requestId: string): Promise<{ status: number; body: Body }> => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ query }),
    });
    return { status: res.status, body: (await res.json()) as Body };
  };
  const report = async () => (await (await fetch(`${url}/report`)).json()) as Report;
  const items = (r: Report) => r.writes.flatMap((w) => w.items);

  it('work starts after the whole response: nothing was taken when it finished, the first write follows the slowest resolver', async () => {
    const { status, body } = await gql('{ order(id: "s1") { id total } slow }', 's1');
    expect(status).toBe(200);
    expect(body).toEqual({ data: { order: { id: 's1', total: 10 }, slow: 'slow' } });
    let r!: Report;
    await eventually(async () => {
      r = await report();
      expect(items(r).map(label).sort()).toEqual(['confirm', 'order', 'order.total']);
    });
    // When the response finished, the library had not taken this request's items (they were held in its scope).
    expect(r.probes.s1).toEqual(expect.objectContaining({ status: 200, acceptedAtFinish: 0, sinkItemsAtFinish: 0 }));
    // A tap() at the resolver's return would have written ~120 ms before `slow` resolved.
    expect(r.writes[0].at).toBeGreaterThan(r.slowResolvedAt);
    expect(r.writes[0].at).toBeGreaterThanOrEqual(r.probes.s1.finishedAt);
    expect(r.writes.map((w) => w.items.length)).toEqual([3]); // one scope, one batch
    expect(r.stats.requests).toMatchObject({ finished: 1, aborted: 0, open: 0 });

    // The control: an undecorated resolver's item is taken at once, so the probe does see it before the finish.
    expect((await gql('{ plain slow }', 'p1')).body).toEqual({ data: { plain: 'plain', slow: 'slow' } });
    await eventually(async () => expect((await report()).probes.p1).toEqual(expect.objectContaining({ status: 200, acceptedAtFinish: 4 })));
    expect((await report()).stats.requests.finished).toBe(1);
  });

  it('50 concurrent queries, each with its own x-request-id: every item carries its own request id', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `r${i}`);
    const results = await Promise.all(ids.map((id) => gql(`{ order(id: "${id}") { id total } }`, id)));
    expect(results.map((r) => r.status)).toEqual(ids.map(() => 200));
    let r!: Report;
    await eventually(async () => {
      r = await report();
      expect(items(r)).toHaveLength(150);
    }, 10_000);
    for (const item of items(r)) expect(item.correlation).toEqual({ requestId: idOf(item) });
    for (const id of ids) expect(items(r).filter((i) => idOf(i) === id).map(label).sort()).toEqual(['confirm', 'order', 'order.total']);
    expect(r.stats.requests).toMatchObject({ finished: 50, open: 0 });
    expect(r.stats).toMatchObject({ accepted: 150, delivered: 150, pending: 0, skipped: 0 });
  });

  it('a resolver that throws: only its failure/always items run; a failing field fails its parent, not a sibling branch', async () => {
    const boom = await gql('{ boom(id: "b1") }', 'b1');
    expect(boom.status).toBe(200);
    expect(boom.body.errors?.map((e) => e.path)).toEqual([['boom']]);
    await eventually(async () => expect((await report()).stats.skipped).toBe(1));
    expect(items(await report()).map(label).sort()).toEqual(['boom-always', 'boom-failure']);

    const mixed = await gql('{ order(id: "c1") { id broken } other: order(id: "c2") { id total } }', 'c');
    expect(mixed.body.errors?.map((e) => e.path)).toEqual([['order', 'broken']]);
    let r!: Report;
    await eventually(async () => {
      r = await report();
      expect(r.stats.skipped).toBe(3); // boom-success, c1's confirm (success), broken-success
      expect(items(r)).toHaveLength(7);
    });
    const got = items(r)
      .slice(2)
      .map((i) => `${label(i)}:${idOf(i)}`)
      .sort();
    // c1: the query's job (success) is skipped, its log (always) runs; broken: failure only. c2: all run.
    expect(got).toEqual(['broken-failure:c1', 'confirm:c2', 'order.total:c2', 'order:c1', 'order:c2']);
    expect(r.stats.requests).toMatchObject({ finished: 2, open: 0 });
  });
});
