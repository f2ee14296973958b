import { afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { type InvokeOptions, LambdaEmulator } from '../support/lambda-emulator';
import { codeRoot, LambdaFunction, lambdaRic, RIC_BUILD_TIMEOUT_MS } from '../support/lambda-function';
import { compileFixture } from '../support/node-app';

/**
 * The Lambda Runtime and Extensions API protocol, as the serverless mode's extension and the emulator
 * follow it (test/fixtures/lambda-bare.ts, no Nest, under the real runtime interface client): an INVOKE
 * that reaches the extension after the handler's release, `event/next` failing (a transport error, then a
 * 500 and a 403), an extension that reported `exit/error`, a second response for one request id.
 */
jest.setTimeout(60_000);

let fixture: string;
let emulator: LambdaEmulator | undefined;
let fn: LambdaFunction | undefined;

beforeAll(() => {
  lambdaRic();
  fixture = compileFixture('lambda-bare');
}, RIC_BUILD_TIMEOUT_MS);

afterEach(async () => {
  emulator?.kill();
  if (fn) await fn.exited;
  await emulator?.close();
  emulator = fn = undefined;
});

async function start(mode: string, timeoutMs = 3000): Promise<LambdaEmulator> {
  const started = await LambdaEmulator.start({ timeoutMs });
  emulator = started;
  started.launch(() => (fn = new LambdaFunction(started, 'lambda-bare.handler', codeRoot(fixture), { MODE: mode })));
  return started;
}

async function invoke(options: InvokeOptions = {}) {
  const invocation = await emulator!.invoke({}, options).done;
  if (invocation.timedOut) throw new Error(`the invocation timed out. Function output:\n${fn!.output}`);
  return invocation;
}

const ms = (values: number[]) => values.map((v) => v.toFixed(1)).join(', ');

describe('the extension and the handler wrapper on Lambda', () => {
  it('an INVOKE that reaches the extension after the handler released its invocation holds nothing: the freeze follows at once', async () => {
    await start('trivial');
    await invoke(); // Init and a first invocation
    const late: number[] = [];
    for (let i = 0; i < 5; i++) {
      const invocation = await invoke({ extensionsDelayMs: 30 }); // the handler returns and releases first
      expect(invocation.runtimeNextAt!).toBeLessThan(invocation.extensionEventAt!);
      late.push(invocation.frozenAt! - invocation.responseAt!);
    }
    const prompt: number[] = [];
    for (let i = 0; i < 20; i++) {
      const invocation = await invoke();
      prompt.push(invocation.frozenAt! - invocation.responseAt!);
    }
    // Held to releaseBy (the deadline less 100 ms) it would be about 2,900 ms.
    expect(Math.max(...late)).toBeLessThan(300);
    expect(Math.max(...prompt)).toBeLessThan(300);
    process.stdout.write(`[serverless-lambda-protocol] INVOKE 30 ms after the release: response -> freeze ${ms(late)} ms; no delay, 20 invocations: max ${Math.max(...prompt).toFixed(1)} ms\n`);
  });

  it('event/next without an answer (connection reset) is retried: the invocation ends on time, the environment goes on', async () => {
    await start('trivial');
    await invoke();
    emulator!.faults.push('reset', 'reset');
    const invocation = await invoke();
    expect(emulator!.faultsApplied.map((f) => f.fault)).toEqual(['reset', 'reset']);
    const took = invocation.frozenAt! - invocation.responseAt!;
    expect(took).toBeLessThan(1000); // two retries, 20 and 100 ms after the failures
    await invoke();
    expect(emulator!.resets).toEqual([]);
    expect(fn!.lines('The Lambda extension stopped')).toEqual([]);
    process.stdout.write(`[serverless-lambda-protocol] event/next reset twice: response -> freeze ${took.toFixed(1)} ms\n`);
  });

  it('event/next answered 500, then 403: the extension reports exit/error and ends the process at once; a fresh Init serves the next invocation', async () => {
    await start('trivial');
    await invoke();
    const ended: number[] = [];
    for (const status of [500, 403]) {
      emulator!.faults.push(status);
      const pid = fn!.child.pid;
      const failing = await invoke();
      const fault = emulator!.faultsApplied.at(-1)!;
      const reset = failing.reset!;
      expect(failing.responseAt).toBeDefined(); // the client had its response
      expect(reset).toEqual(expect.objectContaining({ reason: 'exit', requestId: failing.requestId, exit: { code: null, signal: 'SIGTERM' } }));
      expect(reset.extensions[0].failed).toEqual(expect.objectContaining({ path: '/2020-01-01/extension/exit/error', type: 'Extension.NextFailed' }));
      expect(fn!.lines('The Lambda extension stopped')).toEqual([expect.stringContaining(`event/next answered HTTP ${status}`)]);
      ended.push(reset.endedAt - fault.at);
      await invoke(); // a new process: Init, the extension registered again
      expect(fn!.child.pid).not.toBe(pid);
      expect(emulator!.extensions).toHaveLength(1);
    }
    expect(Math.max(...ended)).toBeLessThan(500); // not the 3,000 ms timeout
    expect(emulator!.invocations.every((i) => !i.timedOut)).toBe(true);
    process.stdout.write(`[serverless-lambda-protocol] event/next answered 500, 403: the process ended ${ms(ended)} ms after the answer\n`);
  });
});

describe('the emulator, as Lambda', () => {
  it('an extension that reported exit/error: its calls are refused, the invocation runs to its timeout, SIGTERM then SIGKILL 500 ms later', async () => {
    await start('rogue', 800);
    const invocation = await emulator!.invoke({}).done;
    expect(invocation.responseAt).toBeDefined();
    expect(invocation.timedOut).toBe(true);
    const reset = invocation.reset!;
    expect(reset).toEqual(expect.objectContaining({ reason: 'timeout', graceMs: 500, ended: 'killed', exit: { code: null, signal: 'SIGKILL' } }));
    expect(reset.endedAt - reset.at).toBeGreaterThanOrEqual(490);
    expect(reset.extensions[0]).toEqual(expect.objectContaining({ failed: expect.objectContaining({ path: '/2020-01-01/extension/exit/error' }), refusedCalls: ['/2020-01-01/extension/event/next'] }));
    expect(fn!.lines('rogue: exit/error answered 202')).toHaveLength(1);
    expect(fn!.lines('rogue: event/next after exit/error answered 403')).toHaveLength(1);
    expect(fn!.lines('rogue: SIGTERM ignored')).toHaveLength(1);
  });

  it('a second response or error for one request id is refused with 403', async () => {
    await start('double');
    const invocation = await invoke();
    expect(fn!.lines('double: {"statuses":[202,403,403]}')).toHaveLength(1);
    expect(invocation.body).toContain('mine'); // the first response stands
    expect(invocation.error).toBeUndefined();
    expect(invocation.refused.map((r) => r.kind)).toEqual(['response', 'error', 'response']); // the runtime's own post is the third
  });
});
