import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  answerFault,
  type EmulatorOptions,
  type Extension,
  type ExtensionFault,
  type FunctionProcess,
  header,
  type Invocation,
  type InvokeOptions,
  invokeEvent,
  later,
  readPosted,
  runtimeHeaders,
  type Queued,
  type Reset,
  SHUTDOWN_GRACE_MS,
  send,
  text,
  unregistrable,
} from './lambda-emulator-parts';
import { FunctionSlot } from './lambda-emulator-process';

export type { EmulatorOptions, Extension, ExtensionFault, FunctionProcess, Invocation, InvokeOptions, Reset } from './lambda-emulator-parts';

/**
 * The Lambda Runtime API (2018-06-01) and Extensions API (2020-01-01) on 127.0.0.1, written from AWS's
 * documented protocol, with the environment's lifecycle that decides when Lambda freezes a function:
 *
 * - runtime: `GET /runtime/invocation/next` (the event and its headers), `POST /runtime/invocation/{id}/response`
 *   (buffered, or streamed with its error trailers) or `/error` — one per invocation: a second is refused
 *   (403 `InvalidStateTransition`) — and `POST /runtime/init/error`;
 * - extensions: `POST /extension/register` (refused once the runtime has asked for its first invocation, and
 *   for SHUTDOWN, which internal extensions may not take), `GET /extension/event/next`, `/extension/init/error`
 *   and `/extension/exit/error`: after those no call of the extension succeeds (403), and the Invoke phase
 *   still waits for it — the invocation runs to its timeout.
 *
 * The function process is frozen with SIGSTOP exactly when Lambda freezes an environment — the runtime and
 * every registered extension have signalled completion with a Next request and no event is pending (for an
 * invocation: after its response or error was posted) — and thawed with SIGCONT before the next event is
 * handed out. An invocation not released by its deadline is a timeout: the environment is reset — SIGTERM,
 * then SIGKILL 500 ms later with an extension registered (at once without one) — and the next invocation
 * gets a fresh Init (a new process, from {@link LambdaEmulator.launch}). A process that ends by itself ends
 * its invocation (`Runtime.ExitError` without a response) and the environment. Shutdown: SIGTERM and SIGKILL alike.
 */
export class LambdaEmulator {
  readonly invocations: Invocation[] = [];
  /** The extensions of the current environment (a reset starts with none). */
  readonly extensions: Extension[] = [];
  readonly refusedRegistrations: Array<{ status: number; reason: string }> = [];
  readonly initErrors: Array<{ type?: string; body: string }> = [];
  /** Every end of an environment: resets and shutdowns. */
  readonly resets: Reset[] = [];
  /** Faults for the next extension `event/next` requests, in order; each applied one is moved to `faultsApplied`. */
  readonly faults: ExtensionFault[] = [];
  readonly faultsApplied: Array<{ fault: ExtensionFault; at: number }> = [];
  /** Called right after each freeze, while the process is stopped (what is at the destinations then was delivered before it). */
  onFreeze: ((invocation: Invocation | undefined) => void | Promise<void>) | undefined;
  /** The function process's pid (LambdaFunction sets it). */
  pid: number | undefined;
  private runtimeWaiting: ServerResponse | undefined;
  private runtimeAskedOnce = false;
  private readonly queue: Queued[] = [];
  private current: (Queued & { timer: NodeJS.Timeout }) | undefined;
  private readonly answered = new Set<string>();
  private readonly slot = new FunctionSlot();
  /** While the emulator ends an environment: its calls get no answer. */
  private ending = false;
  private closed = false;
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

  /** Starts the function process with `start` (its Init), and again after each reset, for the next invocation. */
  launch<F extends FunctionProcess>(start: () => F): F {
    this.slot.use(start);
    return this.slot.start((exit) => this.exitedByItself(exit)) as F;
  }

  /** Hands `event` to the function (thawing it) once the environment is ready; resolves with the invocation's record. */
  invoke(event: unknown, options: InvokeOptions = {}): Invocation {
    const invocation = { requestId: randomUUID(), event, deadlineMs: 0, invokedAt: 0, streamed: false, refused: [], extensionNextAt: [], timedOut: false } as unknown as Invocation;
    invocation.done = new Promise((resolve) => this.queue.push({ invocation, options, resolve }));
    this.dispatch();
    return invocation;
  }

  /** Ends the environment (Lambda's Shutdown): thaws it, SIGTERM, then SIGKILL after 500 ms with an extension registered (at once without). */
  shutdown(): Promise<Reset> {
    return this.endEnvironment('shutdown');
  }

  /** Whether the function process is frozen (stopped). */
  get frozen(): boolean {
    return this.slot.frozen;
  }

  /** Kills the function process for good (a test's end): no fresh Init follows. */
  kill(): void {
    this.closed = true;
    this.slot.kill();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.slot.thaw();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.ending || req.socket.destroyed) return; // the environment is ending: its calls go unanswered
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
    if (!ext) return send(res, 403, { errorMessage: 'unknown extension identifier', errorType: 'Extension.UnknownExtensionIdentifier' });
    if (ext.failed) {
      ext.refusedCalls.push(path);
      return send(res, 403, { errorMessage: `the extension reported ${ext.failed.path}: no further call succeeds`, errorType: 'Extension.InvalidExtensionState' });
    }
    if (req.method === 'GET' && path === '/2020-01-01/extension/event/next') return this.extensionNext(ext, req, res);
    if (req.method === 'POST' && /^\/2020-01-01\/extension\/(init|exit)\/error$/.test(path)) {
      ext.failed = { path, type: header(req, 'lambda-extension-function-error-type'), body: await text(req) };
      return send(res, 202, { status: 'OK' });
    }
    send(res, 404, { errorMessage: `no such API: ${req.method} ${path}`, errorType: 'InvalidRequest' });
  }

  private async register(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const name = header(req, 'lambda-extension-name');
    const body = await text(req);
    const refused = unregistrable(name, body, this.runtimeAskedOnce, this.extensions.length);
    if (refused) {
      this.refusedRegistrations.push(refused);
      return send(res, refused.status, { errorMessage: refused.reason, errorType: 'Extension.RegistrationError' });
    }
    const id = randomUUID();
    this.extensions.push({ id, name: name ?? '', waiting: undefined, refusedCalls: [] });
    send(res, 200, { functionName: 'emulated', functionVersion: '$LATEST', handler: 'index.handler' }, { 'Lambda-Extension-Identifier': id });
  }

  private runtimeNext(res: ServerResponse): void {
    this.runtimeAskedOnce = true;
    this.runtimeWaiting = res;
    res.once('close', () => this.runtimeWaiting === res && (this.runtimeWaiting = undefined));
    if (this.current?.invocation.responseAt !== undefined || this.current?.invocation.error) this.current.invocation.runtimeNextAt = performance.now();
    this.settle();
  }

  private extensionNext(ext: Extension, req: IncomingMessage, res: ServerResponse): void {
    const fault = this.faults.shift();
    if (fault !== undefined) {
      this.faultsApplied.push({ fault, at: performance.now() });
      return answerFault(fault, req, res);
    }
    ext.waiting = res;
    res.once('close', () => ext.waiting === res && (ext.waiting = undefined));
    this.current?.invocation.extensionNextAt.push(performance.now());
    this.settle();
  }

  private async posted(requestId: string, kind: 'response' | 'error', req: IncomingMessage, res: ServerResponse): Promise<void> {
    const invocation = this.current?.invocation;
    if (this.answered.has(requestId)) {
      await text(req);
      this.invocations.find((i) => i.requestId === requestId)?.refused.push({ kind, at: performance.now() });
      return send(res, 403, { errorMessage: `invocation ${requestId} has its response or error already`, errorType: 'InvalidStateTransition' });
    }
    if (!invocation || invocation.requestId !== requestId) return send(res, 400, { errorMessage: `no invocation ${requestId} in progress`, errorType: 'InvalidRequestID' });
    this.answered.add(requestId);
    await readPosted(invocation, kind, req);
    invocation.responseAt = performance.now();
    send(res, 202, { status: 'OK' });
    this.settle();
  }

  /** Hands out the next event once the runtime and every extension wait on Next, thawing the process first; starts a fresh Init after a reset. */
  private dispatch(): void {
    if (this.current || this.ending || this.queue.length === 0) return;
    if (!this.slot.running) {
      if (this.slot.launchable && !this.closed) this.slot.start((exit) => this.exitedByItself(exit));
      return;
    }
    if (!this.runtimeWaiting || this.extensions.some((e) => !e.waiting && !e.failed)) return;
    const next = this.queue.shift()!;
    const invocation = next.invocation;
    this.slot.thaw();
    invocation.invokedAt = performance.now();
    invocation.deadlineMs = Date.now() + this.timeoutMs;
    const timer = setTimeout(() => this.timeout(), this.timeoutMs);
    this.current = { ...next, timer };
    this.invocations.push(invocation);
    const runtime = this.runtimeWaiting;
    this.runtimeWaiting = undefined;
    later(next.options.runtimeDelayMs, () => {
      invocation.runtimeEventAt = performance.now();
      send(runtime, 200, invocation.event, runtimeHeaders(invocation));
    });
    const waiting = this.extensions.flatMap((e) => (e.waiting ? [e.waiting] : []));
    for (const ext of this.extensions) ext.waiting = undefined;
    later(next.options.extensionsDelayMs, () => {
      invocation.extensionEventAt = performance.now();
      for (const res of waiting) send(res, 200, invokeEvent(invocation), { 'Lambda-Extension-Event-Identifier': randomUUID() });
    });
  }

  /** Freezes when everyone has signalled completion and nothing is pending; else hands out a queued event. */
  private settle(): void {
    // A failed extension never signals completion again: the Invoke phase waits for it until the timeout.
    const everyoneWaits = this.runtimeWaiting !== undefined && this.extensions.every((e) => e.waiting);
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
    if (!this.slot.freeze()) return;
    if (invocation) invocation.frozenAt = performance.now();
    void this.onFreeze?.(invocation);
  }

  private timeout(): void {
    const current = this.current;
    if (!current) return;
    current.invocation.timedOut = true;
    this.current = undefined;
    void this.endEnvironment('timeout', current.invocation).then((reset) => {
      current.invocation.reset = reset;
      current.resolve(current.invocation);
      this.dispatch();
    });
  }

  /** Ends the environment: SIGTERM, then SIGKILL after the grace (500 ms with an extension registered, at once without). */
  private async endEnvironment(reason: 'timeout' | 'shutdown', invocation?: Invocation): Promise<Reset> {
    this.ending = true;
    const graceMs = this.extensions.length > 0 ? SHUTDOWN_GRACE_MS : 0;
    const at = performance.now();
    const extensions = [...this.extensions];
    const { ended, exit } = await this.slot.end(graceMs);
    const reset: Reset = { reason, requestId: invocation?.requestId, graceMs, at, endedAt: performance.now(), ended, exit, extensions };
    this.newEnvironment(reset);
    this.ending = false;
    return reset;
  }

  /** The function process ended without the emulator ending it: Lambda ends the invocation in progress (`Runtime.ExitError` without a response) and resets. */
  private exitedByItself(exit: Reset['exit']): void {
    const now = performance.now();
    const current = this.current;
    const reset: Reset = { reason: 'exit', requestId: current?.invocation.requestId, graceMs: 0, at: now, endedAt: now, ended: 'exited', exit, extensions: [...this.extensions] };
    this.newEnvironment(reset);
    if (current) {
      clearTimeout(current.timer);
      this.current = undefined;
      const { invocation } = current;
      if (invocation.responseAt === undefined && !invocation.error) invocation.error = { type: 'Runtime.ExitError', body: JSON.stringify({ exit }) };
      current.resolve(Object.assign(invocation, { reset }));
    }
    this.dispatch();
  }

  private newEnvironment(reset: Reset): void {
    this.resets.push(reset);
    this.runtimeWaiting = undefined;
    this.runtimeAskedOnce = false;
    this.extensions.length = 0;
  }
}
