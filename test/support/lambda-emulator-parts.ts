import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The types and HTTP helpers of the Lambda emulator (lambda-emulator.ts). */

export const ARN = 'arn:aws:lambda:us-east-1:123456789012:function:emulated';

/** How long Lambda lets the runtime run after its SIGTERM when an extension is registered (internal ones: 500 ms). */
export const SHUTDOWN_GRACE_MS = 500;

/** One invocation as the emulator saw it (times are `performance.now()` of the test process). */
export interface Invocation {
  requestId: string;
  event: unknown;
  deadlineMs: number;
  invokedAt: number;
  /** When the event went to the runtime, and the INVOKE event to the extensions (later when delayed: {@link InvokeOptions}). */
  runtimeEventAt?: number;
  extensionEventAt?: number;
  /** The whole response received (the end of a streamed body). */
  responseAt?: number;
  /** A streamed response's first body byte. */
  firstByteAt?: number;
  streamed: boolean;
  /** The response body (a streamed HTTP-integration response: the body after its prelude). */
  body?: string;
  prelude?: unknown;
  error?: { type?: string; body: string };
  /** Responses and errors posted for it after the first one (each answered 403 `InvalidStateTransition`). */
  refused: Array<{ kind: 'response' | 'error'; at: number }>;
  /** Extensions' `event/next` calls after the event was handed out (their completion). */
  extensionNextAt: number[];
  runtimeNextAt?: number;
  frozenAt?: number;
  timedOut: boolean;
  /** The end of the environment that ended it: its timeout, or its process ending by itself. */
  reset?: Reset;
  /** Resolves once the invocation is over: frozen after it, timed out (once the environment is reset), or ended with its process. */
  done: Promise<Invocation>;
}

/** Options of {@link LambdaEmulator.start}. */
export interface EmulatorOptions {
  /** The function's timeout (each invocation's deadline is this long after it is handed out). Default 3000 ms. */
  timeoutMs?: number;
}

/** An invocation waiting for the environment, or in progress. */
export interface Queued {
  invocation: Invocation;
  options: InvokeOptions;
  resolve: (i: Invocation) => void;
}

/** Delays of one invocation's events, to order what the function sees (Lambda does not order them). */
export interface InvokeOptions {
  /** The runtime's event comes this much later than the extensions' INVOKE. */
  runtimeDelayMs?: number;
  /** The extensions' INVOKE comes this much later than the runtime's event. */
  extensionsDelayMs?: number;
}

export interface Extension {
  id: string;
  name: string;
  waiting: ServerResponse | undefined;
  /** Its `init/error` or `exit/error`: no further call of it succeeds, and the Invoke phase still waits for it. */
  failed?: { path: string; type?: string; body: string };
  /** The calls refused after its failure (403 `Extension.InvalidExtensionState`). */
  refusedCalls: string[];
}

/** The end of an execution environment: a reset (timeout, or its process ended), or its shutdown. */
export interface Reset {
  reason: 'timeout' | 'exit' | 'shutdown';
  /** The invocation in progress then, if any. */
  requestId?: string;
  /** The time between SIGTERM and SIGKILL: 500 ms with an extension registered, 0 (no SIGTERM) without. */
  graceMs: number;
  /** When it began (SIGTERM sent), and when the process had ended. */
  at: number;
  endedAt: number;
  /** By itself within the grace (or before any signal: `exit`), or by SIGKILL. */
  ended: 'exited' | 'killed';
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  /** The extensions of that environment. */
  extensions: Extension[];
}

/** A function process (LambdaFunction): its pid and its end. */
export interface FunctionProcess {
  readonly child: { readonly pid?: number };
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A fault for the next extension `event/next` request to arrive: `'reset'` destroys its connection
 * without an answer (a transport error); a number answers it with that status (`403`, `500`).
 */
export type ExtensionFault = 'reset' | number;

/** Why Lambda refuses a registration (`Lambda-Extension-Name` `name`, body `body`), if it does. */
export function unregistrable(name: string | undefined, body: string, initOver: boolean, registered: number): { status: number; reason: string } | undefined {
  if (initOver) return { status: 403, reason: 'registration after Init: the runtime has already asked for its first invocation' };
  if (!name) return { status: 400, reason: 'missing Lambda-Extension-Name header' };
  let events: unknown;
  try {
    events = (JSON.parse(body || '{}') as { events?: unknown }).events ?? [];
  } catch {
    return { status: 400, reason: 'body is not JSON' };
  }
  if (!Array.isArray(events) || events.some((e) => e !== 'INVOKE' && e !== 'SHUTDOWN')) return { status: 400, reason: 'events must be INVOKE and/or SHUTDOWN' };
  if (events.includes('SHUTDOWN')) return { status: 400, reason: 'an internal extension may not register for SHUTDOWN' };
  if (registered >= 10) return { status: 400, reason: 'at most 10 extensions' };
  return undefined;
}

/** Sends `name` to the process; `false` when it is gone. */
export function signal(pid: number, name: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

export function header(req: IncomingMessage, name: string, from: Record<string, string | string[] | undefined> = req.headers): string | undefined {
  const value = from[name] ?? from[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

export async function text(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  return body;
}

export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** Applies a fault to an extension's `event/next` request: its connection destroyed, or that status. */
export function answerFault(fault: ExtensionFault, req: IncomingMessage, res: ServerResponse): void {
  if (fault === 'reset') req.socket.destroy();
  else send(res, fault, { errorMessage: `fault injected: HTTP ${fault}`, errorType: fault === 403 ? 'Extension.InvalidExtensionState' : 'Extension.ContainerError' });
}

/** Runs `fn` now, or `ms` later. */
export function later(ms: number | undefined, fn: () => void): void {
  if (ms) setTimeout(fn, ms);
  else fn();
}

/** The headers of the runtime's event. */
export function runtimeHeaders(invocation: Invocation): Record<string, string> {
  return {
    'Lambda-Runtime-Aws-Request-Id': invocation.requestId,
    'Lambda-Runtime-Deadline-Ms': String(invocation.deadlineMs),
    'Lambda-Runtime-Invoked-Function-Arn': ARN,
    'Lambda-Runtime-Trace-Id': `Root=1-${Date.now().toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)};Sampled=0`,
  };
}

/** The extensions' INVOKE event. */
export function invokeEvent(invocation: Invocation): unknown {
  const tracing = { type: 'X-Amzn-Trace-Id', value: 'Root=1-0-0;Sampled=0' };
  return { eventType: 'INVOKE', deadlineMs: invocation.deadlineMs, requestId: invocation.requestId, invokedFunctionArn: ARN, tracing };
}

/** Reads a posted error, or a posted response (buffered or streamed, with its error trailers), into `invocation`. */
export async function readPosted(invocation: Invocation, kind: 'response' | 'error', req: IncomingMessage): Promise<void> {
  if (kind === 'error') {
    invocation.error = { type: header(req, 'lambda-runtime-function-error-type'), body: await text(req) };
    return;
  }
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
