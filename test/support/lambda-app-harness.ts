import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { HttpReceiver, type ReceiverReply } from './http-receiver';
import { type Invocation, type InvokeOptions, LambdaEmulator } from './lambda-emulator';
import { codeRoot, LambdaFunction, lambdaRic, RIC_BUILD_TIMEOUT_MS } from './lambda-function';
import { compileFixture } from './node-app';
import { RedisServer } from './redis-server';

/**
 * The Nest app of test/fixtures/lambda-app.ts as a Lambda function under the real runtime interface
 * client, against the emulator, for a describe of the serverless specs: a private Redis (BullMQ, the
 * dead-letter stream), an HTTP receiver for the log sink (black-holed while `down`), one emulator and
 * function per test (killed after it).
 */
export interface LambdaApp {
  readonly redis: RedisServer;
  readonly receiver: HttpReceiver;
  readonly emulator: LambdaEmulator;
  /** The function process now (a fresh Init after a reset starts another). */
  readonly fn: LambdaFunction;
  /** While true, the log receiver answers nothing (a black hole). */
  down: boolean;
  /** Starts the emulator and the function (`MODE`, more environment); the key prefix and dead-letter stream of this run. */
  start(mode: string, env?: Record<string, string>, timeoutMs?: number): Promise<{ prefix: string; dlKey: string }>;
  /** Invokes `POST /order/<mark>` and waits for its end; throws on a timeout or an error. */
  invoke(mark: string, options?: InvokeOptions): Promise<Invocation>;
  /** When the receiver got the log item of `mark` (its request's arrival), if it has. */
  loggedAt(mark: string): number | undefined;
  logCount(mark: string): number;
  jobExists(prefix: string, mark: string): Promise<boolean>;
  /** The dead letters in the stream `dlKey`. */
  deadLetters(dlKey: string): Promise<Array<{ reason: string; sink: string; item: { fields?: { mark?: string } } }>>;
}

/** API Gateway HTTP API (payload 2.0) event for `POST /<path>`. */
export function apiEvent(path: string): unknown {
  const http = { method: 'POST', path: `/${path}`, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' };
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: `/${path}`,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', host: 'lambda.test' },
    requestContext: { accountId: '123456789012', apiId: 'api', domainName: 'lambda.test', domainPrefix: 'lambda', http, requestId: path, routeKey: '$default', stage: '$default', time: '', timeEpoch: Date.now() },
    body: '{}',
    isBase64Encoded: false,
  };
}

/** Sets up a describe's {@link LambdaApp}; `name` keeps its keys apart from other spec files'. */
export function useLambdaApp(name: string): LambdaApp {
  const redis = new RedisServer();
  let fixture: string;
  let run = 0;
  const app = { redis, down: false } as Omit<LambdaApp, 'receiver' | 'emulator' | 'fn'> & { receiver: HttpReceiver; emulator?: LambdaEmulator; fn?: LambdaFunction };

  beforeAll(async () => {
    lambdaRic(); // built once into the cache (minutes the first time)
    fixture = compileFixture('lambda-app');
    await redis.start();
    app.receiver = await HttpReceiver.start((): ReceiverReply => (app.down ? 'hang' : { status: 200 }));
  }, RIC_BUILD_TIMEOUT_MS);

  afterEach(async () => {
    app.down = false;
    app.emulator?.kill();
    if (app.fn) await app.fn.exited;
    await app.emulator?.close();
    app.emulator = undefined;
    app.fn = undefined;
  });

  afterAll(async () => {
    await app.receiver?.close();
    await redis.dispose();
  });

  app.start = async (mode, env = {}, timeoutMs = 3000) => {
    run++;
    const prefix = `${name}${run}`;
    const dlKey = `${name}${run}:dead-letters`;
    const emulator = await LambdaEmulator.start({ timeoutMs });
    app.emulator = emulator;
    const vars = { MODE: mode, REDIS_PORT: String(redis.port), PREFIX: prefix, RECEIVER_URL: app.receiver.url('/logs'), DL_KEY: dlKey, ...env };
    emulator.launch(() => (app.fn = new LambdaFunction(emulator, 'lambda-app.handler', codeRoot(fixture), vars)));
    return { prefix, dlKey };
  };
  app.invoke = async (mark, options) => {
    const invocation = await app.emulator!.invoke(apiEvent(`order/${mark}`), options).done;
    const record = JSON.stringify({ ...invocation, event: undefined, reset: undefined });
    if (invocation.timedOut) throw new Error(`invocation ${mark} timed out (${record}). Function output:\n${app.fn!.output}`);
    if (invocation.error) throw new Error(`invocation ${mark} failed: ${JSON.stringify(invocation.error)}. Function output:\n${app.fn!.output}`);
    return invocation;
  };
  app.loggedAt = (mark) => app.receiver.requestsTo('/logs').find((r) => r.text.includes(`"mark":"${mark}"`) && r.reply !== 'hang')?.at;
  app.logCount = (mark) => app.receiver.delivered('/logs').filter((item) => JSON.stringify(item).includes(`"mark":"${mark}"`)).length;
  app.jobExists = async (prefix, mark) => (await redis.command('EXISTS', `${prefix}:orders:${mark}`)) === ':1';
  app.deadLetters = async (dlKey) => {
    const records = (await redis.command('XRANGE', dlKey, '-', '+')).split('\r\n').filter((line) => line.startsWith('{'));
    return records.map((line) => JSON.parse(line) as { reason: string; sink: string; item: { fields?: { mark?: string } } });
  };
  return app as LambdaApp;
}
