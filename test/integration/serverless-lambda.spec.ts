import { describe, expect, it, jest } from '@jest/globals';
import { apiEvent, useLambdaApp } from '../support/lambda-app-harness';

/**
 * The serverless mode on AWS Lambda, end to end: a Nest app (test/fixtures/lambda-app.ts) run by the real
 * runtime interface client (aws-lambda-ric) against the Runtime and Extensions API emulator, which freezes
 * the function process (SIGSTOP) exactly when Lambda would. What is at the destinations while the process
 * is frozen was delivered before the freeze. Then the edges: which margin holds when the extension begins
 * an invocation before the handler wrapper does; a timeout (Lambda's reset: SIGTERM, SIGKILL 500 ms later,
 * a fresh Init) and the environment's shutdown, each met by the stop-signal drain and its 300 ms budget.
 */
jest.setTimeout(120_000);

const app = useLambdaApp('lambda');
const { invoke, loggedAt, logCount, jobExists } = app;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

describe('serverless mode on Lambda (internal extension)', () => {
  it('200 invocations: the response is posted first, every item is at its destination before the freeze, exactly once', async () => {
    const { prefix } = await app.start('extension');
    const after: number[] = [];
    const lag: number[] = [];
    for (let i = 0; i < 200; i++) {
      const mark = `m${i}`;
      const invocation = await invoke(mark);
      // The process is frozen now: what the destinations hold was delivered before the freeze.
      const at = loggedAt(mark);
      expect({ mark, logged: at !== undefined, job: await jobExists(prefix, mark) }).toEqual({ mark, logged: true, job: true });
      expect(invocation.responseAt!).toBeLessThan(at!);
      expect(at!).toBeLessThan(invocation.frozenAt!);
      after.push(invocation.frozenAt! - invocation.responseAt!);
      lag.push(at! - invocation.responseAt!);
    }
    for (let i = 0; i < 200; i++) expect(logCount(`m${i}`)).toBe(1);
    expect(await app.redis.command('LLEN', `${prefix}:orders:wait`)).toBe(':200');
    expect(app.emulator.extensions).toHaveLength(1);
    expect(app.emulator.invocations.every((i) => i.frozenAt !== undefined && !i.timedOut)).toBe(true);
    expect(app.fn.lines('without the serverless mode')).toEqual([]);
    process.stdout.write(
      `[serverless-lambda] 200 invocations: response -> log item at receiver p50 ${percentile(lag, 50).toFixed(1)} ms, p95 ${percentile(lag, 95).toFixed(1)} ms; ` +
        `response -> freeze (time added per invocation) p50 ${percentile(after, 50).toFixed(1)} ms, p95 ${percentile(after, 95).toFixed(1)} ms, max ${Math.max(...after).toFixed(1)} ms\n`,
    );
  });

  it('without the serverless mode the items are still pending at the freeze (and delivered only after a thaw)', async () => {
    await app.start('plain');
    let missing = 0;
    for (let i = 0; i < 10; i++) {
      await invoke(`p${i}`);
      if (loggedAt(`p${i}`) === undefined) missing++;
    }
    // Lambda freezes the process right after the response: the items deferred by then are stuck until a
    // thaw. One write can slip out between the response and the freeze (a race a busy machine widens).
    expect(missing).toBeGreaterThan(0);
    process.stdout.write(`[serverless-lambda] without the serverless mode: ${missing} of 10 items not delivered at the freeze\n`);
    expect(app.fn.lines('without the serverless mode')).toHaveLength(1);
    // Thawed by later invocations, the frozen work goes on — while each lasts: the last item may need a
    // few of them on a busy machine (the process is frozen again as soon as an invocation's response is posted).
    let thaws = 0;
    while (logCount('p9') === 0 && thaws < 20) await invoke(`p-thaw-${thaws++}`);
    expect(logCount('p9')).toBe(1);
    process.stdout.write(`[serverless-lambda] without the serverless mode: the last frozen item delivered after ${thaws} later invocation(s)\n`);
  });

  it('a bootstrap inside the first invocation: the registration is refused, one warning, the fallback waits and loses nothing', async () => {
    const { prefix } = await app.start('lazy');
    for (let i = 0; i < 5; i++) {
      const mark = `l${i}`;
      const invocation = await invoke(mark);
      expect(loggedAt(mark)!).toBeLessThan(invocation.responseAt!); // the response waited for the work
      expect(await jobExists(prefix, mark)).toBe(true);
    }
    expect(app.emulator.refusedRegistrations).toEqual([expect.objectContaining({ status: 403 })]);
    expect(app.emulator.extensions).toHaveLength(0);
    expect(app.fn.lines('Lambda refused the extension')).toHaveLength(1);
    expect(app.fn.lines('nothing is lost')).toHaveLength(2); // the refusal's warning and the fallback's, once each
  });
});

describe('serverless mode on Lambda: a destination down, then SIGKILL while frozen', () => {
  it('the work stops at the deadline budget, the freeze comes on time, the items are in the dead-letter store; killed frozen, nothing is missing', async () => {
    const timeoutMs = 2000;
    const { prefix, dlKey } = await app.start('extension', { MARGIN_MS: '400' }, timeoutMs);
    for (let i = 0; i < 3; i++) await invoke(`k${i}`);
    app.down = true; // the log receiver answers nothing from now on (a black hole)
    const outage = await invoke('k-down');
    const took = outage.frozenAt! - outage.invokedAt;
    expect(took).toBeGreaterThan(timeoutMs - 400 - 50); // waited for its budget…
    expect(took).toBeLessThan(timeoutMs); // …and released it before the deadline
    expect(await jobExists(prefix, 'k-down')).toBe(true);
    const letters = await app.deadLetters(dlKey);
    expect(letters).toEqual([expect.objectContaining({ reason: 'expired', sink: 'http', item: expect.objectContaining({ fields: { mark: 'k-down' } }) })]);
    expect(app.fn.lines('1 of 2 deferred deliveries not delivered at the end of its deadline budget')).toHaveLength(1);

    // Frozen now (its extension called event/next): a SIGKILL loses nothing the earlier invocations deferred.
    expect(app.emulator.frozen).toBe(true);
    app.fn.child.kill('SIGKILL');
    await app.fn.exited;
    for (let i = 0; i < 3; i++) {
      expect(logCount(`k${i}`)).toBe(1);
      expect(await jobExists(prefix, `k${i}`)).toBe(true);
    }
  });
});

describe('serverless mode on Lambda: response streaming', () => {
  it('the client stream ends first, the work is settled before the handler resolves', async () => {
    const { prefix } = await app.start('streaming');
    for (let i = 0; i < 5; i++) {
      const mark = `s${i}`;
      const invocation = await invoke(mark);
      expect(invocation.streamed).toBe(true);
      expect(invocation.prelude).toEqual(expect.objectContaining({ statusCode: 201 }));
      expect(JSON.parse(invocation.body!)).toEqual(expect.objectContaining({ mark }));
      const at = loggedAt(mark)!;
      expect(invocation.responseAt!).toBeLessThan(at);
      expect(at).toBeLessThan(invocation.frozenAt!);
      expect(await jobExists(prefix, mark)).toBe(true);
    }
    expect(app.emulator.extensions).toHaveLength(0);
  });
});

describe('serverless mode on Lambda: the deadline margin', () => {
  it("the handler wrapper's deadlineMarginMs holds whichever of the extension and the wrapper begins the invocation first", async () => {
    const timeoutMs = 1200;
    // The extension's margin 800 ms, the wrapper's 300 ms: the work may run until 900 ms.
    const { dlKey } = await app.start('extension', { MARGIN_MS: '800', HANDLER_MARGIN_MS: '300' }, timeoutMs);
    await app.invoke('w0');
    app.down = true;
    const extensionFirst = await app.invoke('w-ext', { runtimeDelayMs: 50 });
    const wrapperFirst = await app.invoke('w-wrap', { extensionsDelayMs: 50 });
    expect(extensionFirst.extensionEventAt!).toBeLessThan(extensionFirst.runtimeEventAt!);
    expect(wrapperFirst.runtimeEventAt!).toBeLessThan(wrapperFirst.extensionEventAt!);
    const took = [extensionFirst, wrapperFirst].map((i) => i.frozenAt! - i.invokedAt);
    for (const ms of took) {
      expect(ms).toBeGreaterThan(timeoutMs - 300 - 50); // the wrapper's budget (the extension's would end at 400 ms)
      expect(ms).toBeLessThan(timeoutMs);
    }
    const letters = await app.deadLetters(dlKey);
    expect(letters.map((l) => [l.reason, l.item.fields?.mark])).toEqual([
      ['expired', 'w-ext'],
      ['expired', 'w-wrap'],
    ]);
    process.stdout.write(`[serverless-lambda] margins 800 (extension) / 300 (wrapper), timeout 1200: invoke -> freeze ${took.map((t) => t.toFixed(0)).join(', ')} ms (INVOKE first, handler first)\n`);
  });
});

describe('serverless mode on Lambda: the end of an environment', () => {
  it('a timeout: SIGTERM, the drain dead-letters within 300 ms what it cannot deliver, no SIGKILL; a fresh Init serves the next invocation', async () => {
    const { prefix, dlKey } = await app.start('extension', { MARGIN_MS: '400' }, 1200);
    await app.invoke('t0');
    app.down = true;
    const timedOut = app.fn;
    // Defers t1-early at once, t1-late 50 ms before the deadline (after the extension's release), then hangs.
    const stuck = await app.emulator.invoke(apiEvent('stuck/t1')).done;
    expect(stuck.timedOut).toBe(true);
    const reset = stuck.reset!;
    expect(reset).toEqual(expect.objectContaining({ reason: 'timeout', graceMs: 500, ended: 'exited', exit: { code: null, signal: 'SIGTERM' } }));
    const drained = reset.endedAt - reset.at;
    expect(drained).toBeLessThan(500);
    expect(timedOut.lines('SIGTERM received')).toEqual([expect.stringContaining('drains for up to 300 ms')]);
    // Both jobs reached Redis; the early log item expired at its budget's end, the late one was cut by the drain.
    expect([await app.jobExists(prefix, 't1-early'), await app.jobExists(prefix, 't1-late')]).toEqual([true, true]);
    const letters = (await app.deadLetters(dlKey)).map((l) => [l.item.fields?.mark, l.reason]);
    expect(letters).toEqual([
      ['t1-early', 'expired'],
      ['t1-late', expect.stringMatching(/^shutdown/)],
    ]);

    app.down = false;
    const fresh = await app.invoke('t2');
    expect(app.fn).not.toBe(timedOut);
    expect(app.emulator.extensions).toHaveLength(1);
    expect(app.loggedAt('t2')!).toBeLessThan(fresh.frozenAt!);
    process.stdout.write(`[serverless-lambda] timeout: SIGTERM -> process ended ${drained.toFixed(0)} ms (SIGKILL at 500); dead letters ${JSON.stringify(letters)}\n`);
  });

  it("the environment's shutdown (SIGTERM, 500 ms to SIGKILL): the drain finds every invocation's work settled and the process ends at once", async () => {
    const { prefix, dlKey } = await app.start('extension');
    for (let i = 0; i < 3; i++) await app.invoke(`sd${i}`);
    const reset = await app.emulator.shutdown();
    expect(reset).toEqual(expect.objectContaining({ reason: 'shutdown', graceMs: 500, ended: 'exited', exit: { code: null, signal: 'SIGTERM' } }));
    const ended = reset.endedAt - reset.at;
    expect(ended).toBeLessThan(300);
    expect(app.fn.lines('SIGTERM received')).toEqual([expect.stringContaining('drains for up to 300 ms')]);
    for (let i = 0; i < 3; i++) {
      expect(app.logCount(`sd${i}`)).toBe(1);
      expect(await app.jobExists(prefix, `sd${i}`)).toBe(true);
    }
    expect(await app.deadLetters(dlKey)).toEqual([]);
    process.stdout.write(`[serverless-lambda] shutdown: SIGTERM -> process ended ${ended.toFixed(0)} ms\n`);
  });
});
