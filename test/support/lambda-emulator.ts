import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The Lambda Runtime API (2018-06-01) and Extensions API (2020-01-01) on 127.0.0.1, written from AWS's
 * documented protocol, with the environment's lifecycle that decides when Lambda freezes a function:
 *
 * - runtime: `GET /runtime/invocation/next` (the event, with `Lambda-Runtime-Aws-Request-Id`,
 *   `Lambda-Runtime-Deadline-Ms`, `Lambda-Runtime-Invoked-Function-Arn`, `Lambda-Runtime-Trace-Id`),
 *   `POST /runtime/invocation/{id}/response` (buffered, or streamed: `Lambda-Runtime-Function-Response-Mode:
 *   streaming`, chunked, error trailers), `POST /runtime/invocation/{id}/error`, `POST /runtime/init/error`;
 * - extensions: `POST /extension/register` (`Lambda-Extension-Name`; refused once the runtime has asked
 *   for its first invocation — the Init phase is over — and for SHUTDOWN, which internal extensions may not
 *   take), `GET /extension/event/next` (`Lambda-Extension-Identifier`), `/extension/init/error`, `/extension/exit/error`.
 *
 * The function process is frozen with SIGSTOP exactly when Lambda freezes an environment — the runtime and
 * every registered extension have signalled completion with a Next request and no event is pending (for an
 * invocation: after its response or error was posted) — and thawed with SIGCONT before the next event is
 * handed out. An invocation not released by its deadline is a timeout: the environment is reset (SIGKILL).
 * Shutdown: SIGTERM, then SIGKILL after 500 ms with an extension registered (0 ms without one).
 */

const ARN = 'arn:aws:lambda:us-east-1:123456789012:function:emulated';

/** One invocation as the emulator saw it (times are `performance.now()` of the test process). */
export interface Invocation {
  requestId: string;
  event: unknown;
  deadlineMs: number;
  invokedAt: number;
  /** The whole response received (the end of a streamed body). */
  responseAt?: number;
  /** A streamed response's first body byte. */
  firstByteAt?: number;
  streamed: boolean;
  /** The response body (a streamed HTTP-integration response: the body after its prelude). */
  body?: string;
  prelude?: unknown;
  error?: { type?: string; body: string };
  /** Extensions' `event/next` calls after the event was handed out (their completion). */
  extensionNextAt: number[];
  runtimeNextAt?: number;
  frozenAt?: number;
  timedOut: boolean;
  /** Resolves once the invocation is over: frozen after it, or timed out. */
  done: Promise<Invocation>;
}

interface Extension {
  id: string;
  name: string;
  waiting: ServerResponse | undefined;
  failed?: { path: string; type?: string; body: string };
}

/** Options of {@link LambdaEmulator.start}. */
export interface EmulatorOptions {
  /** The function's timeout (each invocation's deadline is this long after it is handed out). Default 3000 ms. */
  timeoutMs?: number;
}

export class LambdaEmulator {
  readonly invocations: Invocation[] = [];
  readonly extensions: Extension[] = [];
  readonly refusedRegistrations: Array<{ status: number; reason: string }> = [];
  readonly initErrors: Array<{ type?: string; body: string }> = [];
  /** Called right after each freeze, while the process is stopped (what is at the destinations then was delivered before it). */
  onFreeze: ((invocation: Invocation | undefined) => void | Promise<void>) | undefined;
  pid: number | undefined;
  frozen = false;
  private runtimeWaiting: ServerResponse | undefined;
  private runtimeAskedOnce = false;
  private readonly queue: Array<{ invocation: Invocation; resolve: (i: Invocation) => void }> = [];
  private current: { invocation: Invocation; resolve: (i: Invocation) => void; timer: NodeJS.Timeout } | undefined;
  private port = 0;

  private constructor(
    private readonly server: Server,
    private readonly timeoutMs: number,
  ) {}

  static async start(options: EmulatorOptions = {}): Promise<LambdaEmulator> {
    let emulator!: LambdaEmulator;
    const server = createServer((req, res) => void emulator.route(req, res));
    emulator = new LambdaEmulator(server, options.timeoutMs ?? 3000);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    emulator.port = (server.address() as AddressInfo).port;
    return emulator;
  }

  /** What `AWS_LAMBDA_RUNTIME_API` is set to. */
  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Hands `event` to the function (thawing it) once the environment is ready; resolves with the invocation's record. */
  invoke(event: unknown): Invocation {
    const invocation = { requestId: randomUUID(), event, deadlineMs: 0, invokedAt: 0, streamed: false, extensionNextAt: [], timedOut: false } as unknown as Invocation;
    invocation.done = new Promise((resolve) => this.queue.push({ invocation, resolve }));
    this.dispatch();
    return invocation;
  }

  /** Ends the environment: thaws it, SIGTERM, then SIGKILL after 500 ms with an extension registered (at once without). */
  async shutdown(exited: Promise<unknown>): Promise<'exited' | 'killed'> {
    if (this.pid === undefined) return 'exited';
    this.thaw();
    const graceMs = this.extensions.length > 0 ? 500 : 0;
    if (graceMs > 0) signal(this.pid, 'SIGTERM');
    const ended = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), graceMs))]);
    if (!ended) this.kill();
    return ended ? 'exited' : 'killed';
  }

  kill(): void {
    if (this.pid !== undefined) signal(this.pid, 'SIGKILL');
  }
  async close(): Promise<void> {
    this.thaw();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    const match = /^\/2018-06-01\/runtime\/invocation\/([^/]+)\/(response|error)$/.exec(path);
    if (req.method === 'GET' && path === '/2018-06-01/runtime/invocation/next') return this.runtimeNext(res);
    if (req.method === 'POST' && match) return this.posted(decodeURIComponent(match[1]), match[2] as 'response' | 'error', req, res);
    if (req.method === 'POST' && path === '/2018-06-01/runtime/init/error') {
      this.initErrors.push({ type: header(req, 'lambda-runtime-function-error-type'), body: await text(req) });
      return send(res, 202, { status: 'OK' });
    }
    if (req.method === 'POST' && path === '/2020-01-01/extension/register') return this.register(req, res);
    const ext = this.extensions.find((e) => e.id === header(req, 'lambda-extension-identifier'));
    if (!ext || ext.failed) return send(res, 403, { errorMessage: 'unknown or failed extension identifier', errorType: 'Extension.Forbidden' });
    if (req.method === 'GET' && path === '/2020-01-01/extension/event/next') return this.extensionNext(ext, res);
    if (req.method === 'POST' && /^\/2020-01-01\/extension\/(init|exit)\/error$/.test(path)) {
      ext.failed = { path, type: header(req, 'lambda-extension-function-error-type'), body: await text(req) };
      return send(res, 202, { status: 'OK' });
    }
    send(res, 404, { errorMessage: `no such API: ${req.method} ${path}`, errorType: 'InvalidRequest' });
  }

  private async register(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const name = header(req, 'lambda-extension-name');
    const body = await text(req);
    const refuse = (status: number, reason: string) => {
      this.refusedRegistrations.push({ status, reason });
      send(res, status, { errorMessage: reason, errorType: 'Extension.RegistrationError' });
    };
    if (this.runtimeAskedOnce) return refuse(403, 'registration after Init: the runtime has already asked for its first invocation');
    if (!name) return refuse(400, 'missing Lambda-Extension-Name header');
    let events: unknown;
    try {
      events = (JSON.parse(body || '{}') as { events?: unknown }).events ?? [];
    } catch {
      return refuse(400, 'body is not JSON');
    }
    if (!Array.isArray(events) || events.some((e) => e !== 'INVOKE' && e !== 'SHUTDOWN')) return refuse(400, 'events must be INVOKE and/or SHUTDOWN');
    if (events.includes('SHUTDOWN')) return refuse(400, 'an internal extension may not register for SHUTDOWN');
    if (this.extensions.length >= 10) return refuse(400, 'at most 10 extensions');
    const id = randomUUID();
    this.extensions.push({ id, name, waiting: undefined });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Lambda-Extension-Identifier': id });
    res.end(JSON.stringify({ functionName: 'emulated', functionVersion: '$LATEST', handler: 'index.handler' }));
  }

  private runtimeNext(res: ServerResponse): void {
    this.runtimeAskedOnce = true;
    this.runtimeWaiting = res;
    if (this.current?.invocation.responseAt !== undefined || this.current?.invocation.error) this.current.invocation.runtimeNextAt = performance.now();
    this.settle();
  }

  private extensionNext(ext: Extension, res: ServerResponse): void {
    ext.waiting = res;
    this.current?.invocation.extensionNextAt.push(performance.now());
    this.settle();
  }

  private async posted(requestId: string, kind: 'response' | 'error', req: IncomingMessage, res: ServerResponse): Promise<void> {
    const invocation = this.current?.invocation;
    if (!invocation || invocation.requestId !== requestId) return send(res, 400, { errorMessage: `no invocation ${requestId} in progress`, errorType: 'InvalidRequestID' });
    if (kind === 'error') {
      invocation.error = { type: header(req, 'lambda-runtime-function-error-type'), body: await text(req) };
    } else {
      invocation.streamed = header(req, 'lambda-runtime-function-response-mode') === 'streaming';
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => {
        invocation.firstByteAt ??= performance.now();
        chunks.push(chunk);
      });
      await new Promise((resolve) => req.on('end', resolve));
      const type = header(req, 'lambda-runtime-function-error-type', req.trailers);
      if (type) invocation.error = { type, body: Buffer.from(header(req, 'lambda-runtime-function-error-body', req.trailers) ?? '', 'base64').toString() };
      readBody(invocation, Buffer.concat(chunks), header(req, 'content-type') ?? '');
    }
    invocation.responseAt = performance.now();
    send(res, 202, { status: 'OK' });
    this.settle();
  }

  /** Hands out the next event once the runtime and every extension wait on Next, thawing the process first. */
  private dispatch(): void {
    if (this.current || this.queue.length === 0 || !this.runtimeWaiting || this.extensions.some((e) => !e.waiting && !e.failed)) return;
    const next = this.queue.shift()!;
    const invocation = next.invocation;
    this.thaw();
    invocation.invokedAt = performance.now();
    invocation.deadlineMs = Date.now() + this.timeoutMs;
    const timer = setTimeout(() => this.timeout(), this.timeoutMs);
    this.current = { ...next, timer };
    this.invocations.push(invocation);
    const runtime = this.runtimeWaiting;
    this.runtimeWaiting = undefined;
    runtime.writeHead(200, {
      'Content-Type': 'application/json',
      'Lambda-Runtime-Aws-Request-Id': invocation.requestId,
      'Lambda-Runtime-Deadline-Ms': String(invocation.deadlineMs),
      'Lambda-Runtime-Invoked-Function-Arn': ARN,
      'Lambda-Runtime-Trace-Id': `Root=1-${Date.now().toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)};Sampled=0`,
    });
    runtime.end(JSON.stringify(invocation.event));
    const invoke = { eventType: 'INVOKE', deadlineMs: invocation.deadlineMs, requestId: invocation.requestId, invokedFunctionArn: ARN, tracing: { type: 'X-Amzn-Trace-Id', value: 'Root=1-0-0;Sampled=0' } };
    for (const ext of this.extensions.filter((e) => e.waiting)) send(ext.waiting!, 200, invoke, { 'Lambda-Extension-Event-Identifier': randomUUID() });
    for (const ext of this.extensions) ext.waiting = undefined;
  }

  /** Freezes when everyone has signalled completion and nothing is pending; else hands out a queued event. */
  private settle(): void {
    const everyoneWaits = this.runtimeWaiting !== undefined && this.extensions.every((e) => e.waiting || e.failed);
    if (!everyoneWaits) return;
    const current = this.current;
    if (current && current.invocation.responseAt === undefined && !current.invocation.error) return;
    if (current) clearTimeout(current.timer);
    this.current = undefined;
    if (this.queue.length === 0) this.freeze(current?.invocation);
    current?.resolve(current.invocation);
    this.dispatch();
  }

  private freeze(invocation: Invocation | undefined): void {
    if (this.pid === undefined || this.frozen || !signal(this.pid, 'SIGSTOP')) return;
    this.frozen = true;
    if (invocation) invocation.frozenAt = performance.now();
    void this.onFreeze?.(invocation);
  }

  private thaw(): void {
    if (!this.frozen || this.pid === undefined) return;
    this.frozen = false;
    signal(this.pid, 'SIGCONT');
  }

  private timeout(): void {
    const current = this.current;
    if (!current) return;
    current.invocation.timedOut = true;
    this.current = undefined;
    this.kill(); // a timeout resets the environment
    current.resolve(current.invocation);
  }
}

/** Sends `name` to the process; `false` when it is gone. */
function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

function header(req: IncomingMessage, name: string, from: Record<string, string | string[] | undefined> = req.headers): string | undefined {
  const value = from[name] ?? from[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

async function text(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  return body;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** A streamed HTTP-integration response is a JSON prelude, 8 NUL bytes, then the body. */
function readBody(invocation: Invocation, raw: Buffer, contentType: string): void {
  if (!contentType.includes('application/vnd.awslambda.http-integration-response')) {
    invocation.body = raw.toString();
    return;
  }
  const split = raw.indexOf(Buffer.alloc(8));
  invocation.prelude = JSON.parse(raw.subarray(0, split).toString()) as unknown;
  invocation.body = raw.subarray(split + 8).toString();
}
