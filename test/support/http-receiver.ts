import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * What the receiver does with one request.
 * - `{ status, headers?, body?, delayMs?, bodyDelayMs? }`: answer (after `delayMs`, if given); with
 *   `bodyDelayMs`, the status line and headers go out at once and the body ends that much later.
 * - `'hang'`: read the request and never answer; the connection stays open until the client gives
 *   up or the receiver is closed.
 * - `'reset'`: read the request, then destroy the connection without answering.
 */
export type ReceiverReply =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; bodyDelayMs?: number }
  | 'hang'
  | 'reset';

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  /** 0 for the first request the receiver got, and so on. */
  seq: number;
  method: string;
  /** Path and query, e.g. `/logs?x=1`. */
  url: string;
  /** Path only, e.g. `/logs`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as sent (gzipped if it was). */
  raw: Buffer;
  /** The body decoded (gunzipped if `content-encoding: gzip`). */
  text: string;
  /** Items read from the body: `{"items":[...]}`, a JSON array, or NDJSON (`application/x-ndjson`). */
  items: unknown[];
  /** Set if the body could not be read as items; the receiver then answers 400. */
  parseError?: string;
  /** `performance.now()` when the whole body had arrived. */
  at: number;
  /** What the receiver did. */
  reply: ReceiverReply;
}

/** Decides the reply to a request; `seq` counts the requests on the same path, from 0. */
export type Responder = (request: ReceivedRequest, seqOnPath: number) => ReceiverReply;

/** Replies in the given order to the requests on each path, then `200` forever. */
export function replyInOrder(...replies: ReceiverReply[]): Responder {
  return (_request, seqOnPath) => replies[seqOnPath] ?? { status: 200 };
}

function parseItems(request: { headers: IncomingHttpHeaders; text: string }): unknown[] {
  const type = String(request.headers['content-type'] ?? '');
  if (type.includes('ndjson')) {
    if (!request.text.endsWith('\n')) throw new Error('NDJSON body does not end with a newline');
    return request.text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
  }
  const parsed = JSON.parse(request.text) as unknown;
  if (Array.isArray(parsed)) return parsed;
  if (parsed && typeof parsed === 'object' && Array.isArray((parsed as { items?: unknown }).items)) {
    return (parsed as { items: unknown[] }).items;
  }
  throw new Error('body is neither {"items":[...]} nor an array');
}

/**
 * A real HTTP server on 127.0.0.1 (random port) that records every request, decodes the items it
 * carries and answers as its `responder` says (default: 200). For integration tests of the HTTP
 * sink: no mocks, real sockets, real keep-alive, real resets and hangs.
 */
export class HttpReceiver {
  /** Every request, in arrival order (answered or not). */
  readonly requests: ReceivedRequest[] = [];
  /** Connections accepted since start. */
  connectionsOpened = 0;
  responder: Responder = () => ({ status: 200 });

  private readonly sockets = new Set<Socket>();
  private readonly perPath = new Map<string, number>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Starts a receiver on 127.0.0.1 on a free port. */
  static async start(responder?: Responder): Promise<HttpReceiver> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const receiver = new HttpReceiver(server, (server.address() as AddressInfo).port);
    if (responder) receiver.responder = responder;
    server.on('connection', (socket) => receiver.onConnection(socket));
    server.on('request', (req, res) => receiver.onRequest(req, res));
    return receiver;
  }

  /** URL of a path on this receiver, e.g. `url('/logs')`. */
  url(path = '/'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Connections open right now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** Requests on one path (or all). */
  requestsTo(path?: string): ReceivedRequest[] {
    return path === undefined ? [...this.requests] : this.requests.filter((r) => r.path === path);
  }

  /** Items of the requests answered 2xx, i.e. delivered (on one path, or all). */
  delivered(path?: string): unknown[] {
    return this.requestsTo(path)
      .filter((r) => typeof r.reply === 'object' && r.reply.status >= 200 && r.reply.status < 300)
      .flatMap((r) => r.items);
  }

  /** Resolves once `predicate()` is true (checked on every request and connection change); rejects after `timeoutMs`. */
  async waitUntil(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`HttpReceiver: timed out after ${timeoutMs} ms waiting for ${what}.`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(wake, Math.min(left, 50));
        const waiters = this.waiters;
        function wake() {
          clearTimeout(timer);
          resolve();
        }
        waiters.push(wake);
      });
    }
  }

  /** Waits until `count` items have been delivered (on one path, or all). */
  waitForDelivered(count: number, path?: string, timeoutMs?: number): Promise<void> {
    return this.waitUntil(
      () => this.delivered(path).length >= count,
      `${count} delivered items${path ? ` on ${path}` : ''} (have ${this.delivered(path).length})`,
      timeoutMs,
    );
  }

  /** Stops listening and destroys every connection (hanging ones included). */
  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.server.closeAllConnections();
    await closed;
  }

  private onConnection(socket: Socket): void {
    this.connectionsOpened++;
    this.sockets.add(socket);
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.wake();
    });
    this.wake();
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined);
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const url = req.url ?? '/';
      const path = url.split('?')[0];
      let text = '';
      let items: unknown[] = [];
      let parseError: string | undefined;
      try {
        text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
        items = parseItems({ headers: req.headers, text });
      } catch (error) {
        parseError = error instanceof Error ? error.message : String(error);
      }
      const request: ReceivedRequest = {
        seq: this.requests.length,
        method: req.method ?? '',
        url,
        path,
        headers: req.headers,
        raw,
        text,
        items,
        parseError,
        at: performance.now(),
        reply: { status: 200 },
      };
      const seqOnPath = this.perPath.get(path) ?? 0;
      this.perPath.set(path, seqOnPath + 1);
      request.reply = parseError ? { status: 400, body: parseError } : this.responder(request, seqOnPath);
      this.requests.push(request);
      this.answer(request.reply, req, res);
      this.wake();
    });
  }

  private answer(reply: ReceiverReply, req: IncomingMessage, res: ServerResponse): void {
    if (reply === 'hang') {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    if (reply === 'reset') {
      req.socket.destroy();
      return;
    }
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(reply.status, { 'content-type': 'text/plain', ...(reply.headers ?? {}) });
      if (!reply.bodyDelayMs) return void res.end(reply.body ?? '');
      res.flushHeaders();
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (!res.destroyed) res.end(reply.body ?? 'done');
      }, reply.bodyDelayMs);
      this.timers.add(timer);
    };
    if (reply.delayMs && reply.delayMs > 0) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        send();
      }, reply.delayMs);
      this.timers.add(timer);
    } else send();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** A URL on 127.0.0.1 where nothing listens (a port just released): connections are refused. */
export async function deadUrl(path = '/'): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}${path}`;
}
