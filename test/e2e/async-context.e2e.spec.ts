import { Controller, Get, Inject, Injectable, Param } from '@nestjs/common';
import { AfterResponse, DeferredWork } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, useMemoryApp } from '../support/platforms';

@Injectable()
class Billing {
  constructor(@Inject(DeferredWork) private readonly work: DeferredWork) {}

  async charge(id: string) {
    await new Promise((r) => setTimeout(r, Number(id) % 5));
    this.work.job('billing', 'receipt', { id }); // deep in the call chain, no request object at hand
  }
}

@Controller()
class BillingController {
  constructor(@Inject(Billing) private readonly billing: Billing) {}

  @Get('charge/:id')
  @AfterResponse()
  async charge(@Param('id') id: string) {
    await this.billing.charge(id);
    return { id };
  }

  @Get('fail/:id')
  @AfterResponse()
  async fail(@Param('id') id: string) {
    await this.billing.charge(id);
    throw new Error('payment failed'); // the receipt job (when: success) must not run
  }
}

describe.each(platforms)('asyncContext: true ($name)', (platform) => {
  failOnUnhandledRejection();
  const ctx = useMemoryApp(platform, { asyncContext: true }, { controllers: [BillingController], providers: [Billing] });

  it('the injectable DeferredWork finds the current request anywhere in the call chain', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => String(i));
    await Promise.all(ids.map((id) => fetch(`${ctx.started.url}/charge/${id}`).then((r) => r.json())));
    await Promise.all(ids.map((id) => fetch(`${ctx.started.url}/fail/${id}`).then((r) => r.text())));
    await ctx.sink.waitFor(60);
    const work = ctx.started.app.get(DeferredWork);
    await work.flush(1000);
    expect(ctx.sink.items.map((i) => (i.kind === 'job' ? (i.data as { id: string }).id : '?')).sort()).toEqual([...ids].sort());
    await eventually(() => expect(work.stats()).toMatchObject({ accepted: 60, skipped: 60, requests: { finished: 120 } }));
  });
});
