import { Controller, Get, Param } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope, DeferredWork } from 'nestjs-deferred-work';
import { failOnUnhandledRejection, platforms, useMemoryApp } from '../support/platforms';

@Controller()
class TagController {
  @Get('tag/:id')
  @AfterResponse()
  async tag(@Param('id') id: string, @Deferred() work: DeferredScope) {
    work.log('info', 'start', { id });
    // Yield a few times with different delays so requests interleave inside the handler.
    await new Promise((r) => setTimeout(r, Number(id) % 7));
    work.metric('tagged', 1, { id });
    await Promise.resolve();
    work.job('q', 'tagged', { id });
    return { id };
  }
}

describe.each(platforms)('no context leaks between concurrent requests ($name)', (platform) => {
  failOnUnhandledRejection();
  const ctx = useMemoryApp(platform, {}, { controllers: [TagController] });

  it('250 concurrent requests each get exactly their own three items', async () => {
    const ids = Array.from({ length: 250 }, (_, i) => String(i));
    const bodies = await Promise.all(ids.map(async (id) => (await fetch(`${ctx.started.url}/tag/${id}`)).json()));
    expect(bodies).toEqual(ids.map((id) => ({ id })));
    await ctx.sink.waitFor(750);
    const byId = new Map<string, string[]>();
    for (const item of ctx.sink.items) {
      const id =
        item.kind === 'log' ? (item.fields!.id as string) : item.kind === 'metric' ? item.tags!.id : (item.data as { id: string }).id;
      byId.set(id, [...(byId.get(id) ?? []), item.kind].sort());
    }
    expect(byId.size).toBe(250);
    for (const id of ids) expect(byId.get(id)).toEqual(['job', 'log', 'metric']);
    const stats = ctx.started.app.get(DeferredWork).stats();
    expect(stats).toMatchObject({ accepted: 750, delivered: 750, requests: { finished: 250 } });
    expect(Math.max(...ctx.sink.batchSizes)).toBeGreaterThan(1); // batched across requests
  });
});
