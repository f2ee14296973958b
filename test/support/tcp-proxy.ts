import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { HttpReceiver } from './http-receiver';

/**
 * A TCP proxy on a free port of 127.0.0.1 in front of a broker, which a test can cut: `cut()` drops
 * every connection at once (no goodbye, like a network failure) and refuses new ones until
 * `restore()`. The broker itself — often shared by other tests — is never touched.
 */
export class TcpProxy {
  port = 0;
  readonly host = '127.0.0.1';
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private open = true;
  /** Connections stay up but nothing passes either way (a black hole: no reset, no answer). */
  private silent = false;
  /** What was sent during the black hole, passed on when it ends (as TCP would, once the path is back). */
  private held: Array<() => void> = [];
  /** While set: how many more lines (CRLF-terminated) of the target's answers pass before a black hole (see `passAnswers`). */
  private answerLines: number | undefined;
  /** Added latency, in ms, of each chunk toward the target and back (see `delay`). */
  private latency = { toTarget: 0, fromTarget: 0 };

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  /**
   * A proxy in front of a server that is meant to come up later: listening (its port held, so no other
   * test's server can take it) and dropping every connection until `start()`.
   */
  static async refusing(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetPort, targetHost);
    await proxy.listen();
    await proxy.stop();
    return proxy;
  }

  /** Whether connections pass (for `loadThroughOutage`'s `running`). */
  get running(): boolean {
    return this.open;
  }

  async listen(): Promise<void> {
    const server = createServer((client) => {
      if (!this.open) {
        client.destroy();
        return;
      }
      const upstream = createConnection({ port: this.targetPort, host: this.targetHost });
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      const pass = (to: Socket, way: 'toTarget' | 'fromTarget') => {
        let due = 0; // chunks leave in order: never before the one sent ahead of them
        return (chunk: Buffer) => {
          if (this.silent) return void this.held.push(() => !to.destroyed && to.write(chunk));
          if (way === 'fromTarget' && this.answerLines !== undefined) {
            const cut = this.answerCut(chunk);
            if (cut < chunk.length) {
              const rest = chunk.subarray(cut);
              this.silent = true;
              this.answerLines = undefined;
              this.held.push(() => !to.destroyed && to.write(rest));
              chunk = chunk.subarray(0, cut);
              if (chunk.length === 0) return;
            }
          }
          const latency = this.latency[way];
          if (latency === 0 && due <= Date.now()) return void to.write(chunk);
          due = Math.max(due, Date.now() + latency);
          setTimeout(() => !to.destroyed && to.write(chunk), due - Date.now());
        };
      };
      client.on('data', pass(upstream, 'toTarget'));
      upstream.on('data', pass(client, 'fromTarget'));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
  }

  /** Drops every connection now (resetting them) and refuses new ones. */
  async stop(): Promise<void> {
    this.open = false;
    this.held = [];
    for (const socket of this.sockets) {
      // A socket already ending cannot be reset (EINVAL on Node 20) and would stay open: destroy it.
      try {
        if (socket.writableEnded || socket.destroyed) socket.destroy();
        else socket.resetAndDestroy();
      } catch {
        socket.destroy();
      }
    }
    this.sockets.clear();
  }

  /** Lets connections through again (and ends a black hole). */
  async start(): Promise<void> {
    this.open = true;
    this.endSilence();
  }

  private endSilence(): void {
    this.silent = false;
    const held = this.held;
    this.held = [];
    for (const send of held) send();
  }

  /**
   * A black hole: connections stay open and nothing passes either way, so a client waits for answers
   * that never come — until `off` (or `start()`), when what was sent meanwhile is passed on, as TCP
   * retransmits once the path is back (to connections still open).
   */
  readonly blackhole = {
    on: async (): Promise<void> => void (this.silent = true),
    off: async (): Promise<void> => this.endSilence(),
  };

  /**
   * A slow link: every chunk is passed on `ms` later (in order) — both ways, so a round trip takes at
   * least twice that, or only the target's answers (`'answers'`: requests arrive on time, answers late,
   * as when a call is carried out but its answer comes after the client gave up). `delay(0)` ends it
   * (chunks already delayed still arrive late).
   */
  delay(ms: number, which: 'both' | 'answers' = 'both'): void {
    this.latency = { toTarget: which === 'both' ? ms : 0, fromTarget: ms };
  }

  /**
   * Lets the next `lines` CRLF-terminated lines of the target's answers through (a Redis bulk reply is
   * two), then becomes a black hole (see `blackhole`), cutting a chunk where needed: a link that dies
   * after the server answered part of what it was sent.
   */
  passAnswers(lines: number): void {
    this.answerLines = lines;
  }

  /** Where in `chunk` the answers allowed by `passAnswers` end (its length when all of it passes); counts them down. */
  private answerCut(chunk: Buffer): number {
    let at = 0;
    while (this.answerLines! > 0) {
      const end = chunk.indexOf('\r\n', at);
      if (end === -1) return chunk.length;
      at = end + 2;
      this.answerLines!--;
    }
    return at;
  }

  async close(): Promise<void> {
    await this.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Fails with how to provide the broker when nothing listens on `port` (tests must fail, never skip silently). */
export async function requireBroker(name: string, port: number, howTo: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    const fail = (why: string) => {
      socket.destroy();
      reject(new Error(`${name} is not reachable on 127.0.0.1:${port} (${why}). These tests need a real ${name}: ${howTo}`));
    };
    socket.once('timeout', () => fail('timed out'));
    socket.once('error', (error: Error) => fail(error.message));
  });
}

/**
 * An `HttpReceiver` behind a `TcpProxy`, started before the tests of the calling `describe` and
 * closed after them: a receiver that a test can take away (`proxy.stop()`) and bring back. Read
 * `receiver` and `proxy` inside the tests.
 */
export function useProxiedReceiver(): { receiver: HttpReceiver; proxy: TcpProxy } {
  const held = {} as { receiver: HttpReceiver; proxy: TcpProxy };
  beforeAll(async () => {
    held.receiver = await HttpReceiver.start();
    held.proxy = new TcpProxy(held.receiver.port);
    await held.proxy.listen();
  });
  afterAll(async () => {
    await held.proxy.close();
    await held.receiver.close();
  });
  return held;
}
