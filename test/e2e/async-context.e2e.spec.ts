import { Controller, Get, Inject, Injectable, Param } from '@nestjs/common';
import { AfterResponse, DeferredWork, DeferredWorkModule, MemorySink } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

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
  let started: StartedApp;
  let sink: MemorySink;

  beforeEach(async () => {
    sink = new MemorySink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], asyncContext: true })],
      controllers: [BillingController],
      providers: [Billing],
    });
  });
  afterEach(() => started.close());

  it('the injectable DeferredWork finds the current request anywhere in the call chain', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => String(i));
    await Promise.all(ids.map((id) => fetch(`${started.url}/charge/${id}`).then((r) => r.json())));
    await Promise.all(ids.map((id) => fetch(`${started.url}/fail/${id}`).then((r) => r.text())));
    await sink.waitFor(60);
    const work = started.app.get(DeferredWork);
    await work.flush(1000);
    expect(sink.items.map((i) => (i.kind === 'job' ? (i.data as { id: string }).id : '?')).sort()).toEqual([...ids].sort());
    await eventually(() => expect(work.stats()).toMatchObject({ accepted: 60, skipped: 60, requests: { finished: 120 } }));
  });
});
