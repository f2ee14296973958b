import { Controller, Get, StreamableFile } from '@nestjs/common';
import { Readable } from 'node:stream';
import { AfterResponse, DeferredWork } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { failOnUnhandledRejection, platforms, useMemoryApp } from '../support/platforms';

@Controller('report')
@AfterResponse({ timing: true })
class ReportController {
  /** The handler returns at once; the body takes ≥ 100 ms to send (two 50 ms pauses). */
  @Get('slow-send')
  slowSend() {
    let step = 0;
    return new StreamableFile(
      new Readable({
        read() {
          const chunk = ['x', 'y', 'z'][step++];
          if (chunk === undefined) return void this.push(null);
          setTimeout(() => this.push(chunk), step === 1 ? 0 : 50);
        },
      }),
    );
  }

  /** The handler takes ≥ 100 ms; the small body is sent at once. */
  @Get('slow-handler')
  async slowHandler() {
    await new Promise((r) => setTimeout(r, 100));
    return { ok: true };
  }

  @Get('untimed')
  @AfterResponse({ timing: false })
  untimed() {
    return 'x';
  }
}

describe.each(platforms)('response-time insight ($name)', (platform) => {
  failOnUnhandledRejection();
  const ctx = useMemoryApp(platform, {}, { controllers: [ReportController] });

  it('tells a fast handler with a slow response apart from a slow handler', async () => {
    await (await fetch(`${ctx.started.url}/report/slow-send`)).text();
    await (await fetch(`${ctx.started.url}/report/slow-handler`)).json();
    await (await fetch(`${ctx.started.url}/report/untimed`)).text();
    const work = ctx.started.app.get(DeferredWork);
    await eventually(() => expect(work.stats().requests.finished).toBe(3));
    await ctx.sink.waitFor(4);
    const routes = work.stats().routes;
    expect(Object.keys(routes).sort()).toEqual(['GET /report/slow-handler', 'GET /report/slow-send']);
    const slowSend = routes['GET /report/slow-send'];
    const slowHandler = routes['GET /report/slow-handler'];
    expect(slowSend.count).toBe(1);
    expect(slowSend.sendMsAvg).toBeGreaterThanOrEqual(90); // two 50 ms pauses happen after the handler returned
    expect(slowSend.sendMsAvg).toBeGreaterThan(slowSend.handlerMsAvg);
    expect(slowHandler.handlerMsAvg).toBeGreaterThanOrEqual(90);
    expect(slowHandler.handlerMsAvg).toBeGreaterThan(slowHandler.sendMsAvg);
    const metrics = ctx.sink.ofKind('metric');
    expect(metrics.map((m) => m.name).sort()).toEqual([
      'http.server.handler_ms',
      'http.server.handler_ms',
      'http.server.send_ms',
      'http.server.send_ms',
    ]);
    expect(metrics.find((m) => m.name === 'http.server.send_ms' && m.tags!.route === '/report/slow-send')).toMatchObject({
      tags: { route: '/report/slow-send', method: 'GET', status: '200' },
    });
  });
});
