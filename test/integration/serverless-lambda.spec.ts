import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { HttpReceiver, type ReceiverReply } from '../support/http-receiver';
import { type Invocation, LambdaEmulator } from '../support/lambda-emulator';
import { codeRoot, LambdaFunction, lambdaRic, RIC_BUILD_TIMEOUT_MS } from '../support/lambda-function';
import { compileFixture } from '../support/node-app';
import { RedisServer } from '../support/redis-server';

/**
 * The serverless mode on AWS Lambda, end to end: a Nest app (test/fixtures/lambda-app.ts) run by the real
 * runtime interface client (aws-lambda-ric) against the Runtime and Extensions API emulator, which freezes
 * the function process (SIGSTOP) exactly when Lambda would. What is at the destinations while the process
 * is frozen was delivered before the freeze.
 */
jest.setTimeout(120_000);

const redis = new RedisServer();
let receiver: HttpReceiver;
let down = false;
let fixture: string;
let emulator: LambdaEmulator | undefined;
let fn: LambdaFunction | undefined;
let run = 0;

beforeAll(async () => {
  lambdaRic(); // built once into the cache (minutes the first time)
  fixture = compileFixture('lambda-app');
  await redis.start();
  receiver = await HttpReceiver.start((): ReceiverReply => (down ? 'hang' : { status: 200 }));
}, RIC_BUILD_TIMEOUT_MS);

afterEach(async () => {
  down = false;
  emulator?.kill();
  if (fn) await fn.exited;
  await emulator?.close();
  emulator = undefined;
  fn = undefined;
});

afterAll(async () => {
  await receiver?.close();
  await redis.dispose();
});

/** API Gateway HTTP API (payload 2.0) event for `POST /order/<mark>`. */
function orderEvent(mark: string): unknown {
  const http = { method: 'POST', path: `/order/${mark}`, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' };
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: `/order/${mark}`,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', host: 'lambda.test' },
    requestContext: { accountId: '123456789012', apiId: 'api', domainName: 'lambda.test', domainPrefix: 'lambda', http, requestId: mark, routeKey: '$default', stage: '$default', time: '', timeEpoch: Date.now() },
    body: '{}',
    isBase64Encoded: false,
  };
}

async function start(mode: string, env: Record<string, string> = {}, timeoutMs = 3000): Promise<{ prefix: string; dlKey: string }> {
  run++;
  const prefix = `lambda${run}`;
  const dlKey = `lambda${run}:dead-letters`;
  emulator = await LambdaEmulator.start({ timeoutMs });
  fn = new LambdaFunction(emulator, 'lambda-app.handler', codeRoot(fixture), {
    MODE: mode,
    REDIS_PORT: String(redis.port),
    PREFIX: prefix,
    RECEIVER_URL: receiver.url('/logs'),
    DL_KEY: dlKey,
    ...env,
  });
  return { prefix, dlKey };
}

async function invoke(mark: string): Promise<Invocation> {
  const invocation = await emulator!.invoke(orderEvent(mark)).done;
  if (invocation.timedOut) throw new Error(`invocation ${mark} timed out (${JSON.stringify({ ...invocation, event: undefined })}). Function output:\n${fn!.output}`);
  if (invocation.error) throw new Error(`invocation ${mark} failed: ${JSON.stringify(invocation.error)}. Function output:\n${fn!.output}`);
  return invocation;
}

/** When the receiver got the log item of `mark` (its request's arrival), if it has. */
function loggedAt(mark: string): number | undefined {
  return receiver.requestsTo('/logs').find((r) => r.text.includes(`"mark":"${mark}"`) && r.reply !== 'hang')?.at;
}

function logCount(mark: string): number {
  return receiver.delivered('/logs').filter((item) => JSON.stringify(item).includes(`"mark":"${mark}"`)).length;
}

async function jobExists(prefix: string, mark: string): Promise<boolean> {
  return (await redis.command('EXISTS', `${prefix}:orders:${mark}`)) === ':1';
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

describe('serverless mode on Lambda (internal extension)', () => {
  it('200 invocations: the response is posted first, every item is at its destination before the freeze, exactly once', async () => {
    const { prefix } = await start('extension');
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
    expect(await redis.command('LLEN', `${prefix}:orders:wait`)).toBe(':200');
    expect(emulator!.extensions).toHaveLength(1);
    expect(emulator!.invocations.every((i) => i.frozenAt !== undefined && !i.timedOut)).toBe(true);
    expect(fn!.lines('without the serverless mode')).toEqual([]);
    process.stdout.write(
      `[serverless-lambda] 200 invocations: response -> log item at receiver p50 ${percentile(lag, 50).toFixed(1)} ms, p95 ${percentile(lag, 95).toFixed(1)} ms; ` +
        `response -> freeze (time added per invocation) p50 ${percentile(after, 50).toFixed(1)} ms, p95 ${percentile(after, 95).toFixed(1)} ms, max ${Math.max(...after).toFixed(1)} ms\n`,
    );
  });

  it('without the serverless mode the items are still pending at the freeze (and delivered only after a thaw)', async () => {
    await start('plain');
    let missing = 0;
    for (let i = 0; i < 10; i++) {
      await invoke(`p${i}`);
      if (loggedAt(`p${i}`) === undefined) missing++;
    }
    expect(missing).toBe(10);
    expect(fn!.lines('without the serverless mode')).toHaveLength(1);
    // Thawed by the next invocation, the frozen work goes on.
    emulator!.invoke(orderEvent('p-last'));
    await receiver.waitUntil(() => logCount('p9') === 1, 'the last frozen item after the thaw');
  });

  it('a bootstrap inside the first invocation: the registration is refused, one warning, the fallback waits and loses nothing', async () => {
    const { prefix } = await start('lazy');
    for (let i = 0; i < 5; i++) {
      const mark = `l${i}`;
      const invocation = await invoke(mark);
      expect(loggedAt(mark)!).toBeLessThan(invocation.responseAt!); // the response waited for the work
      expect(await jobExists(prefix, mark)).toBe(true);
    }
    expect(emulator!.refusedRegistrations).toEqual([expect.objectContaining({ status: 403 })]);
    expect(emulator!.extensions).toHaveLength(0);
    expect(fn!.lines('Lambda refused the extension')).toHaveLength(1);
    expect(fn!.lines('nothing is lost')).toHaveLength(2); // the refusal's warning and the fallback's, once each
  });
});

describe('serverless mode on Lambda: a destination down, then SIGKILL while frozen', () => {
  it('the work stops at the deadline budget, the freeze comes on time, the items are in the dead-letter store; killed frozen, nothing is missing', async () => {
    const timeoutMs = 2000;
    const { prefix, dlKey } = await start('extension', { MARGIN_MS: '400' }, timeoutMs);
    for (let i = 0; i < 3; i++) await invoke(`k${i}`);
    down = true; // the log receiver answers nothing from now on (a black hole)
    const outage = await invoke('k-down');
    const took = outage.frozenAt! - outage.invokedAt;
    expect(took).toBeGreaterThan(timeoutMs - 400 - 50); // waited for its budget…
    expect(took).toBeLessThan(timeoutMs); // …and released it before the deadline
    expect(await jobExists(prefix, 'k-down')).toBe(true);
    const records = (await redis.command('XRANGE', dlKey, '-', '+')).split('\r\n').filter((line) => line.startsWith('{'));
    const letters = records.map((line) => JSON.parse(line) as { reason: string; sink: string; item: { fields?: { mark?: string } } });
    expect(letters).toEqual([expect.objectContaining({ reason: 'expired', sink: 'http', item: expect.objectContaining({ fields: { mark: 'k-down' } }) })]);
    expect(fn!.lines('1 of 2 deferred deliveries not delivered at the end of its deadline budget')).toHaveLength(1);

    // Frozen now (its extension called event/next): a SIGKILL loses nothing the earlier invocations deferred.
    expect(emulator!.frozen).toBe(true);
    fn!.child.kill('SIGKILL');
    await fn!.exited;
    for (let i = 0; i < 3; i++) {
      expect(logCount(`k${i}`)).toBe(1);
      expect(await jobExists(prefix, `k${i}`)).toBe(true);
    }
  });
});

describe('serverless mode on Lambda: response streaming', () => {
  it('the client stream ends first, the work is settled before the handler resolves', async () => {
    const { prefix } = await start('streaming');
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
    expect(emulator!.extensions).toHaveLength(0);
  });
});
