import { Controller, Get, Res, StreamableFile } from '@nestjs/common';
import { Readable } from 'node:stream';
import { AfterResponse, Deferred, type DeferredScope, DeferredWorkModule } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { RecordingSink } from '../support/recording.sink';
import { failOnUnhandledRejection, platforms, startApp, type StartedApp } from '../support/platforms';

/** Server-side moments of the last request, in performance.now() time of this process. */
const server = { finishedAt: 0 };

@Controller()
class StreamController {
  /** Sends "a", then "b" 60 ms later, then "c" and ends 60 ms after that. */
  @Get('slow-body')
  @AfterResponse()
  slowBody(@Deferred() work: DeferredScope, @Res({ passthrough: true }) reply: { raw?: NodeJS.EventEmitter } & NodeJS.EventEmitter) {
    (reply.raw ?? reply).once('finish', () => (server.finishedAt = performance.now()));
    work.log('info', 'after the body', { n: 1 });
    work.metric('streamed', 1);
    let step = 0;
    const body = new Readable({
      read() {
        const chunk = ['a', 'b', 'c'][step++];
        if (chunk === undefined) return void this.push(null);
        setTimeout(() => this.push(chunk), step === 1 ? 0 : 60);
      },
    });
    return new StreamableFile(body, { type: 'text/plain' });
  }
}

describe.each(platforms)('work starts after the response finished ($name)', (platform) => {
  failOnUnhandledRejection();
  let started: StartedApp;
  let sink: RecordingSink;

  beforeEach(async () => {
    sink = new RecordingSink();
    started = await startApp(platform, {
      imports: [DeferredWorkModule.forRoot({ sinks: [sink], flushIntervalMs: 0 })],
      controllers: [StreamController],
    });
  });
  afterEach(() => started.close());

  it('calls the sink only after the server finished and the client had the body; the client never waits for the sink', async () => {
    let release!: () => void;
    sink.gate = new Promise((r) => (release = r)); // the sink's write blocks until the test releases it
    const received: Array<{ text: string; at: number }> = [];
    const res = await fetch(`${started.url}/slow-body`);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      received.push({ text, at: performance.now() });
    }
    const bodyDoneAt = performance.now();
    expect(text).toBe('abc');
    // The whole body arrived while the sink's write was still blocked (or not even called yet).
    expect(sink.writes.length).toBeLessThanOrEqual(1);
    release();
    await eventually(() => expect(sink.writes).toHaveLength(1));
    const calledAt = sink.writes[0].at;
    const sawB = received.find((r) => r.text.includes('b'))!.at;
    expect(server.finishedAt).toBeGreaterThan(0);
    expect(calledAt).toBeGreaterThanOrEqual(server.finishedAt); // never before 'finish'
    expect(calledAt).toBeGreaterThan(sawB); // a tap()-style interceptor would have written ~120 ms earlier
    expect(bodyDoneAt).toBeGreaterThan(sawB);
    expect(sink.items.map((i) => i.kind).sort()).toEqual(['log', 'metric']);
  });
});
