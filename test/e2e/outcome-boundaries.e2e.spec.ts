import { BadRequestException, Controller, Get, HttpCode, HttpException, Inject, Param, Query, Redirect, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { request } from 'node:http';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork, type SinkItem } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, useMemoryApp } from '../support/platforms';

/**
 * Where the success/failure line is drawn: `status < 400` is `success`; `status >= 400`, or a client
 * that left before the response finished, is `failure`/`aborted`. Every request defers the same four
 * items, each tagged with the request's own id, so the test can tell per request which ran.
 */
function deferAll(work: DeferredScope, id: string): void {
  work.job('q', 'success-job', { id }); // default when: success
  work.metric('success-metric', 1, { id }, { when: 'success' });
  work.log('warn', 'failure-log', { id }, { when: 'failure' });
  work.log('info', 'always-log', { id }); // default when: always
}

const SUCCESS = ['always-log', 'success-job', 'success-metric'];
const FAILURE = ['always-log', 'failure-log'];
const ITEMS_PER_REQUEST = 4;

/** The request id an item was tagged with. */
function idOf(item: SinkItem): string {
  if (item.kind === 'job') return (item.data as { id: string }).id;
  if (item.kind === 'metric') return item.tags!.id;
  if (item.kind === 'log') return item.fields!.id as string;
  throw new Error(`unexpected item ${JSON.stringify(item)}`);
}

function labelOf(item: SinkItem): string {
  if (item.kind === 'job' || item.kind === 'metric') return item.name;
  if (item.kind === 'log') return item.message;
  throw new Error(`unexpected item ${JSON.stringify(item)}`);
}

/** Labels of the delivered items, per request id, sorted. */
function ranById(items: readonly SinkItem[]): Map<string, string[]> {
  const byId = new Map<string, string[]>();
  for (const item of items) byId.set(idOf(item), [...(byId.get(idOf(item)) ?? []), labelOf(item)].sort());
  return byId;
}

/**
 * A GET that the test can abort; settles with the request's error. (`node:http` rather than `fetch`:
 * after an abort, fetch leaves a spare connection open that holds up the app's close for ~4 s.)
 */
function abortableGet(url: string): { abort(): void; settled: Promise<Error> } {
  const controller = new AbortController();
  const settled = new Promise<Error>((resolve, reject) => {
    const req = request(url, { signal: controller.signal, agent: false });
    req.on('error', resolve);
    req.on('response', (res) => reject(new Error(`${url} answered ${res.statusCode} before it was aborted`)));
    req.end();
  });
  return { abort: () => controller.abort(), settled };
}

/** Gates that hold a `slow` handler until the test releases it, and tell the test it got there. */
const held = new Map<string, { entered: () => void; gate: Promise<void> }>();

@Controller()
class BoundaryController {
  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  @Get('redirect/:id')
  @AfterResponse()
  @Redirect('/landing', 302)
  redirect(@Param('id') id: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
  }

  /** `@Redirect()` whose target and status the handler returns. */
  @Get('dynamic-redirect/:id')
  @AfterResponse()
  @Redirect()
  dynamicRedirect(@Param('id') id: string, @Query('status') status: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
    return { url: '/landing', statusCode: Number(status) };
  }

  /** A handler that redirects through the response object itself (`@Res()`), on either adapter. */
  @Get('manual-redirect/:id')
  @AfterResponse()
  manualRedirect(@Param('id') id: string, @Deferred() work: DeferredScope, @Res() res: unknown) {
    deferAll(work, id);
    this.adapterHost.httpAdapter.redirect(res, 302, '/landing');
  }

  @Get('status-399/:id')
  @AfterResponse()
  @HttpCode(399)
  status399(@Param('id') id: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
    return { id };
  }

  @Get('returns-400/:id')
  @AfterResponse()
  @HttpCode(400)
  returns400(@Param('id') id: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
    return { id };
  }

  @Get('throws-400/:id')
  @AfterResponse()
  throws400(@Param('id') id: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
    throw new BadRequestException('exactly 400');
  }

  @Get('ok/:id')
  @AfterResponse()
  ok(@Param('id') id: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
    return { id };
  }

  @Get('client-error/:id')
  @AfterResponse()
  clientError(@Param('id') id: string, @Deferred() work: DeferredScope) {
    deferAll(work, id);
    throw new HttpException('unprocessable', 422);
  }

  /**
   * Defers two items, waits on the test's gate, defers the other two, then answers with `status`
   * (200 or a thrown 4xx). Aborted clients leave while it waits.
   */
  @Get('slow/:id')
  @AfterResponse()
  async slow(@Param('id') id: string, @Query('status') status: string, @Deferred() work: DeferredScope) {
    work.job('q', 'success-job', { id });
    work.log('info', 'always-log', { id });
    const hold = held.get(id)!;
    hold.entered();
    await hold.gate;
    work.metric('success-metric', 1, { id }, { when: 'success' });
    work.log('warn', 'failure-log', { id }, { when: 'failure' });
    if (Number(status) >= 400) throw new HttpException('late failure', Number(status));
    return { id };
  }
}

describe.each(platforms)('outcome boundaries: status < 400 is success, >= 400 or aborted is failure ($name)', (platform) => {
  failOnUnhandledRejection();
  const ctx = useMemoryApp(platform, { flushIntervalMs: 1 }, { controllers: [BoundaryController] });

  /** Waits until `requests` requests settled and their items were delivered or skipped; returns what ran per id. */
  async function settled(requests: number, delivered: number): Promise<Map<string, string[]>> {
    const work = ctx.started.app.get(DeferredWork);
    await ctx.sink.waitFor(delivered);
    await eventually(() => {
      const stats = work.stats();
      expect(stats.requests.finished + stats.requests.aborted).toBe(requests);
      expect(stats.delivered + stats.skipped).toBe(requests * ITEMS_PER_REQUEST);
    });
    return ranById(ctx.sink.items);
  }

  it('a 302 from @Redirect() runs success items, not failure items', async () => {
    const res = await fetch(`${ctx.started.url}/redirect/r1`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/landing');
    await res.arrayBuffer();
    expect(await settled(1, 3)).toEqual(new Map([['r1', SUCCESS]]));
    expect(ctx.started.app.get(DeferredWork).stats()).toMatchObject({ skipped: 1, requests: { finished: 1, aborted: 0 } });
  });

  it.each([301, 303, 307, 308])('a %i from a dynamic @Redirect() runs success items', async (status) => {
    const res = await fetch(`${ctx.started.url}/dynamic-redirect/d${status}?status=${status}`, { redirect: 'manual' });
    expect(res.status).toBe(status);
    await res.arrayBuffer();
    expect(await settled(1, 3)).toEqual(new Map([[`d${status}`, SUCCESS]]));
  });

  it('a 302 the handler sends itself through the response object (@Res()) runs success items', async () => {
    const res = await fetch(`${ctx.started.url}/manual-redirect/m1`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/landing');
    await res.arrayBuffer();
    expect(await settled(1, 3)).toEqual(new Map([['m1', SUCCESS]]));
  });

  it('399 (@HttpCode(399)), the last status below the line, runs success items', async () => {
    const res = await fetch(`${ctx.started.url}/status-399/s399`, { redirect: 'manual' });
    expect(res.status).toBe(399);
    expect(await res.json()).toEqual({ id: 's399' });
    expect(await settled(1, 3)).toEqual(new Map([['s399', SUCCESS]]));
  });

  it('exactly 400 returned by a handler (@HttpCode(400)) runs failure items, not success items', async () => {
    const res = await fetch(`${ctx.started.url}/returns-400/h400`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ id: 'h400' }); // a normal return, not an error response
    expect(await settled(1, 2)).toEqual(new Map([['h400', FAILURE]]));
    expect(ctx.started.app.get(DeferredWork).stats()).toMatchObject({ skipped: 2, requests: { finished: 1, aborted: 0 } });
  });

  it('exactly 400 from a thrown BadRequestException runs failure items, not success items', async () => {
    const res = await fetch(`${ctx.started.url}/throws-400/t400`);
    expect(res.status).toBe(400);
    await res.arrayBuffer();
    expect(await settled(1, 2)).toEqual(new Map([['t400', FAILURE]]));
  });

  it('concurrent requests with mixed outcomes (2xx, 3xx, 4xx, late 4xx, aborted) each follow their own status', async () => {
    const url = ctx.started.url;
    const expected = new Map<string, string[]>();
    const requests: Array<Promise<unknown>> = [];
    const expectStatus = (path: string, status: number, id: string, ran: string[]) => {
      expected.set(id, ran);
      requests.push(
        fetch(`${url}/${path}`, { redirect: 'manual' }).then(async (res) => {
          await res.arrayBuffer();
          expect([id, res.status]).toEqual([id, status]);
        }),
      );
    };

    // Slow requests, all held inside their handler at once: some will finish 200, some a 4xx, some abort.
    const releases: Array<() => void> = [];
    const aborters: Array<ReturnType<typeof abortableGet>> = [];
    const entered: Array<Promise<void>> = [];
    const slowPlan: Array<{ id: string; status?: number }> = [];
    for (let i = 0; i < 12; i++) {
      const id = `slow-${i}`;
      slowPlan.push({ id, status: i % 3 === 0 ? undefined : i % 3 === 1 ? 200 : 404 });
    }
    for (const { id, status } of slowPlan) {
      let release!: () => void;
      let enter!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      entered.push(new Promise<void>((r) => (enter = r)));
      held.set(id, { entered: enter, gate });
      releases.push(release);
      if (status === undefined) {
        aborters.push(abortableGet(`${url}/slow/${id}`));
        expected.set(id, FAILURE);
      } else expectStatus(`slow/${id}?status=${status}`, status, id, status < 400 ? SUCCESS : FAILURE);
    }
    // Fast requests interleaved with the slow ones.
    for (let i = 0; i < 20; i++) {
      expectStatus(`ok/ok-${i}`, 200, `ok-${i}`, SUCCESS);
      expectStatus(`client-error/ce-${i}`, 422, `ce-${i}`, FAILURE);
      expectStatus(`redirect/rd-${i}`, 302, `rd-${i}`, SUCCESS);
      expectStatus(`returns-400/b-${i}`, 400, `b-${i}`, FAILURE);
      expectStatus(`status-399/s-${i}`, 399, `s-${i}`, SUCCESS);
    }

    await Promise.all(entered); // every slow handler is inside, waiting on its gate
    await new Promise((r) => setTimeout(r, 20));
    for (const a of aborters) a.abort();
    for (const a of aborters) expect(await a.settled).toMatchObject({ name: 'AbortError' });
    const work = ctx.started.app.get(DeferredWork);
    await eventually(() => expect(work.stats().requests.aborted).toBe(aborters.length));
    releases.forEach((release) => release()); // the aborted handlers go on, and add their later items after the fact
    await Promise.all(requests);

    const deliveredCount = [...expected.values()].reduce((n, ran) => n + ran.length, 0);
    const ran = await settled(expected.size, deliveredCount);
    expect(ran.size).toBe(expected.size);
    for (const [id, items] of expected) expect([id, ran.get(id)]).toEqual([id, items]);
    expect(work.stats()).toMatchObject({
      requests: { finished: expected.size - aborters.length, aborted: aborters.length, open: 0 },
      delivered: deliveredCount,
      pending: 0,
    });
  });
});
