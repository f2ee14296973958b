import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import {
  AfterResponse,
  Deferred,
  type DeferredItem,
  type DeferredScope,
  type DeferredSink,
  DeferredWorkHealthIndicator,
  DeferredWorkModule,
  HttpSink,
} from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/**
 * The liveness probe against a sink that never answers: a custom sink whose write never settles and
 * ignores its abort signal (a buggy sink, or a client with no timeout of its own). The pipeline
 * itself moves on (the write is given up on at its timeout and retried), but every retry leaves
 * one more write hanging: `isLive` goes down naming the sink once the oldest has been unsettled for
 * `writeTimeoutMs + wedgedWriteMs`. A merely slow or failing HTTP receiver never makes it down.
 */
class NeverSettlingSink implements DeferredSink {
  readonly name = 'stuck';
  started = 0;
  async write(_batch: readonly DeferredItem[]): Promise<void> {
    this.started++;
    return new Promise(() => {}); // never settles, never looks at its signal
  }
}

interface LiveBody {
  status: string;
  details: { dw: { status: string; reasons: string[] } };
}

const WRITE_TIMEOUT_MS = 150;
const WEDGED_WRITE_MS = 300;
/**
 * The margin of the "stays up" cases. A healthy write can be in flight for its timeout plus the abort
 * grace (here 300 ms), and on a loaded 2-core CI host the event loop can run a few hundred ms late on
 * top: 300 ms past the timeout is too tight to tell "slow" from "wedged" there. Production's default
 * is 60 s.
 */
const STAYS_UP_WEDGED_WRITE_MS = 2_000;
let wedgedWriteMs = WEDGED_WRITE_MS;

@Controller()
class ProbeController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(DeferredWorkHealthIndicator) private readonly deferred: DeferredWorkHealthIndicator,
  ) {}

  @Get('health/live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.deferred.isLive('dw', { wedgedWriteMs, stalledMs: 300 })]);
  }

  @Get('work')
  @AfterResponse()
  work(@Deferred() work: DeferredScope) {
    work.log('info', 'x');
    return 'ok';
  }
}

const probe = async (url: string) => {
  const res = await fetch(`${url}/health/live`);
  const body = (await res.json()) as LiveBody;
  return { status: res.status, dw: body.details.dw };
};

describe.each(platforms)('isLive through a Terminus endpoint ($name)', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp | undefined;
  let receiver: HttpReceiver | undefined;
  afterEach(async () => {
    await started?.close();
    await receiver?.close();
    started = receiver = undefined;
    wedgedWriteMs = WEDGED_WRITE_MS;
  });

  const start = (sink: DeferredSink) =>
    startApp(platform, {
      imports: [
        TerminusModule.forRoot({ logger: false }),
        DeferredWorkModule.forRoot({
          sinks: [sink],
          writeTimeoutMs: WRITE_TIMEOUT_MS,
          maxAttempts: 1000,
          initialBackoffMs: 10,
          maxBackoffMs: 50,
          shutdownTimeoutMs: 100,
        }),
      ],
      controllers: [ProbeController],
    });

  it('goes down naming the sink when its writes never settle and ignore their abort signal', async () => {
    const sink = new NeverSettlingSink();
    started = await start(sink);
    expect((await probe(started.url)).status).toBe(200);
    const t0 = Date.now();
    expect((await fetch(`${started.url}/work`)).status).toBe(200);
    await eventually(async () => {
      const { status, dw } = await probe(started!.url);
      expect(status).toBe(503);
      expect(dw.status).toBe('down');
      expect(dw.reasons).toEqual([expect.stringMatching(/^sink "stuck" has \d+ write\(s\) that ignored their abort signal and have not settled/)]);
    }, 10_000, 50);
    // Not before the write's timeout plus wedgedWriteMs.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(WRITE_TIMEOUT_MS + WEDGED_WRITE_MS);
    // The pipeline did move on: the write was given up on and retried (each retry one more hanging write).
    expect(sink.started).toBeGreaterThan(1);
  });

  it.each([
    // Slower than the write timeout plus the margin: a pipeline that did not time its writes out would go down.
    ['slow (answers after longer than the write timeout plus wedgedWriteMs)', { status: 200, delayMs: STAYS_UP_WEDGED_WRITE_MS * 2 }],
    ['failing (503)', { status: 503 }],
  ])('stays up while an HTTP receiver is %s', async (_what, reply) => {
    wedgedWriteMs = STAYS_UP_WEDGED_WRITE_MS;
    receiver = await HttpReceiver.start(() => reply);
    started = await start(new HttpSink({ name: 'http', url: receiver.url('/ingest') }));
    for (let i = 0; i < 3; i++) expect((await fetch(`${started.url}/work`)).status).toBe(200);
    await eventually(() => expect(receiver!.requests.length).toBeGreaterThan(0));
    // Over several write timeouts plus wedgedWriteMs and stalledMs, liveness never goes down.
    const until = Date.now() + WRITE_TIMEOUT_MS * 3 + STAYS_UP_WEDGED_WRITE_MS + 300 + 500;
    let probes = 0;
    while (Date.now() < until) {
      const { status, dw } = await probe(started.url);
      expect({ status, dw }).toEqual({ status: 200, dw: { status: 'up', reasons: [] } });
      probes++;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(probes).toBeGreaterThan(5);
    expect(receiver.requests.length).toBeGreaterThan(1);
  });
});
