import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';

/** Ports tried by a first start whose chosen port another process took first. */
const PORT_ATTEMPTS = 5;

/** Options of {@link RedisServer}. */
export interface RedisServerOptions {
  /**
   * Keep the data across `stop()`/`start()`: an append-only file fsync'd on every write, in a
   * private temporary directory (removed by `dispose()`), so a SIGKILL loses nothing Redis
   * acknowledged — like a real Redis with `appendfsync always`. Default `false`: `--save ""
   * --appendonly no`, nothing on disk, a restart starts empty.
   */
  persistent?: boolean;
  /** More arguments of `redis-server`, given the port (e.g. cluster mode: see `redis-cluster.ts`). Default none. */
  args?: (port: number) => string[];
}

/**
 * A private `redis-server` for integration tests: its own free port on 127.0.0.1, no persistence
 * (`--save "" --appendonly no`), never the default Redis or its DB. It can be stopped (an outage)
 * and started again on the same port (a recovery).
 *
 * With `persistent`, the data survives a stop/start (see {@link RedisServerOptions.persistent}).
 *
 * The binary is `redis-server` on the PATH, or `$REDIS_SERVER_BIN`. If it cannot start, `start()`
 * throws an error saying how to provide one: tests must fail, never skip silently.
 */
export class RedisServer {
  /** The port chosen by the first `start()`; kept across `stop()`/`start()`. */
  port = 0;
  readonly host = '127.0.0.1';
  private child: ChildProcess | undefined;
  private output = '';
  private readonly bin = process.env.REDIS_SERVER_BIN || 'redis-server';
  private dir: string | undefined;

  constructor(private readonly options: RedisServerOptions = {}) {}

  /**
   * Starts the server (on a free port the first time, on the same port after a `stop()`). A free port
   * is only free when it was looked at: should another process take it before the server binds it, the
   * first start tries another one (a few times); a restart keeps its port.
   */
  async start(): Promise<void> {
    if (this.child) return;
    const chosenHere = this.port === 0;
    for (let attempt = 1; ; attempt++) {
      if (this.port === 0) this.port = await freePort();
      try {
        return await this.spawnOnPort();
      } catch (error) {
        const taken = error instanceof PortTaken || /Address already in use/.test(this.output);
        if (!chosenHere || !taken || attempt >= PORT_ATTEMPTS) throw error;
        this.port = 0;
      }
    }
  }

  private async spawnOnPort(): Promise<void> {
    this.output = '';
    const args = ['--port', String(this.port), '--bind', this.host, '--save', '', '--daemonize', 'no', '--loglevel', 'warning'];
    if (this.options.persistent) {
      this.dir ??= mkdtempSync(join(tmpdir(), 'deferred-work-redis-'));
      args.push('--appendonly', 'yes', '--appendfsync', 'always', '--dir', this.dir);
    } else {
      args.push('--appendonly', 'no');
    }
    if (this.options.args) args.push(...this.options.args(this.port));
    const child = spawn(this.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    const spawnFailure = new Promise<never>((_, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => reject(this.howToFix(error.code === 'ENOENT' ? 'not found' : error.message)));
      child.once('exit', (code, signal) =>
        reject(this.howToFix(`exited at start (code ${code}, signal ${signal}): ${this.output.trim().slice(-500)}`)),
      );
    });
    spawnFailure.catch(() => undefined);
    try {
      await Promise.race([this.waitForPong(5000, child.pid), spawnFailure]);
    } catch (error) {
      child.kill('SIGKILL');
      this.child = undefined;
      throw error;
    }
  }

  /** Stops the server at once (SIGKILL: no goodbye to clients, like a crash or a network cut). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /** `stop()` then `start()` on the same port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Stops the server and removes its data directory, if any. */
  async dispose(): Promise<void> {
    await this.stop();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Sends one command and resolves with its raw reply (`+OK`, `:1`, `-ERR ...`, or a bulk string `$n` and its text); for test set-up only. */
  command(...args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: this.host, port: this.port });
      let reply = '';
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`redis-server on port ${this.port} did not answer ${args[0]} in 2000 ms`));
      }, 2000);
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.on('data', (chunk) => {
        reply += chunk.toString();
        if (complete(reply)) {
          clearTimeout(timer);
          socket.end();
          resolve(reply.trimEnd());
        }
      });
      const encoded = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
      socket.write(encoded);
    });
  }

  /** Waits until the server answers — this server, `pid`, not another process that holds the port. */
  private async waitForPong(timeoutMs: number, pid: number | undefined): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        // PING answers while an append-only file is still loading; EXISTS does not (-LOADING).
        // A cluster node with no slots yet answers -CLUSTERDOWN: it is up.
        const reply = await this.command('EXISTS', '__redis_server_probe__');
        if (reply.startsWith(':') || reply.startsWith('-CLUSTERDOWN')) {
          const answered = /process_id:(\d+)/.exec(await this.command('INFO', 'server'))?.[1];
          if (pid !== undefined && answered !== String(pid)) throw new PortTaken(`port ${this.port} is answered by another Redis (pid ${answered})`);
          return;
        }
        last = reply;
      } catch (error) {
        if (error instanceof PortTaken) throw error;
        last = error;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw this.howToFix(`was not ready within ${timeoutMs} ms (${last instanceof Error ? last.message : String(last)})`);
  }

  private howToFix(problem: string): Error {
    return new Error(
      `Cannot start a private Redis for the integration tests: "${this.bin}" ${problem}. ` +
        'These tests need a redis-server binary (Redis >= 2.8.18; they start their own on a free port, with no persistence). ' +
        'Install one (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) ' +
        'or point REDIS_SERVER_BIN at the binary.',
    );
  }
}


/** The port chosen for a server was taken by another process before the server bound it. */
class PortTaken extends Error {}

/** Whether `reply` is a whole RESP reply: one line, or a bulk string's header line and its bytes. */
function complete(reply: string): boolean {
  if (!reply.endsWith('\r\n')) return false;
  if (!reply.startsWith('$')) return true;
  const header = reply.indexOf('\r\n');
  const length = Number(reply.slice(1, header));
  return length < 0 || Buffer.byteLength(reply) >= header + 2 + length + 2;
}
