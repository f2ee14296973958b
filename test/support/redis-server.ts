import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';

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

  /** Starts the server (on a free port the first time, on the same port after a `stop()`). */
  async start(): Promise<void> {
    if (this.child) return;
    if (this.port === 0) this.port = await freePort();
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
      await Promise.race([this.waitForPong(5000), spawnFailure]);
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

  /** Sends one command and resolves with its raw one-line reply (`+OK`, `:1`, `-ERR ...`); for test set-up only. */
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
        if (reply.endsWith('\r\n')) {
          clearTimeout(timer);
          socket.end();
          resolve(reply.trimEnd());
        }
      });
      const encoded = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
      socket.write(encoded);
    });
  }

  private async waitForPong(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        // PING answers while an append-only file is still loading; EXISTS does not (-LOADING).
        // A cluster node with no slots yet answers -CLUSTERDOWN: it is up.
        const reply = await this.command('EXISTS', '__redis_server_probe__');
        if (reply.startsWith(':') || reply.startsWith('-CLUSTERDOWN')) return;
        last = reply;
      } catch (error) {
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

