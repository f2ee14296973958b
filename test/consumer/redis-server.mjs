// A private `redis-server` for the BullMQ consumer apps: the .mjs counterpart of
// test/support/redis-server.ts (which the runner, plain Node, cannot import). Its own free port on
// 127.0.0.1, nothing on disk (`--save "" --appendonly no`), never the default Redis or its data.
//
// The binary is `redis-server` on the PATH, or `$REDIS_SERVER_BIN`. If it cannot start, `start()`
// throws an error saying how to install one: the BullMQ apps then fail, they are never skipped.
import { spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

export class RedisServer {
  host = '127.0.0.1';
  port = 0;
  /** The running `redis-server` process, if any. */
  child = undefined;
  bin = process.env.REDIS_SERVER_BIN || 'redis-server';
  output = '';

  /** Starts the server on a free port; `cwd` is where it runs (it writes nothing there). */
  async start({ cwd } = {}) {
    if (this.child) return;
    this.port = await freePort();
    const args = ['--port', String(this.port), '--bind', this.host, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning'];
    const child = spawn(this.bin, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.on('data', (chunk) => (this.output += chunk));
    child.stderr.on('data', (chunk) => (this.output += chunk));
    const failed = new Promise((_, reject) => {
      child.once('error', (error) => reject(this.howToFix(error.code === 'ENOENT' ? 'was not found' : `could not start: ${error.message}`)));
      child.once('exit', (code, signal) => reject(this.howToFix(`exited at start (code ${code}, signal ${signal}): ${this.output.trim().slice(-500)}`)));
    });
    failed.catch(() => undefined);
    try {
      await Promise.race([this.waitUntilReady(5_000), failed]);
    } catch (error) {
      this.kill();
      throw error;
    }
  }

  /** Stops the server at once (SIGKILL: it keeps nothing anyway). Synchronous, for exit handlers too. */
  kill() {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      try {
        child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }

  /** The running server's version (`redis_version` of INFO server). */
  async version() {
    const info = await this.command('INFO', 'server');
    return /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? 'unknown';
  }

  /** Sends one command and resolves with its raw reply (`+OK`, `:3`, `$5\r\n...`); for checks only. */
  command(...args) {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: this.host, port: this.port });
      let reply = '';
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`redis-server on port ${this.port} did not answer ${args[0]} within 2000 ms`));
      }, 2_000);
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.on('data', (chunk) => {
        reply += chunk;
        if (complete(reply)) {
          clearTimeout(timer);
          socket.end();
          resolve(reply.trimEnd());
        }
      });
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
  }

  async waitUntilReady(timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
      try {
        if ((await this.command('PING')) === '+PONG') return;
      } catch (error) {
        last = error;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw this.howToFix(`was not ready within ${timeoutMs} ms (${last?.message ?? last})`);
  }

  howToFix(problem) {
    return new Error(
      `cannot start a private Redis for the BullMQ consumer apps: "${this.bin}" ${problem}. ` +
        'They need a redis-server binary (the runner starts its own on a free port, with no persistence). ' +
        'Install one (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or point REDIS_SERVER_BIN at the binary.',
    );
  }
}

/** Whether a RESP reply is complete: a one-line reply, or a bulk string with all its bytes. */
function complete(reply) {
  if (!reply.endsWith('\r\n')) return false;
  if (reply[0] !== '$') return true;
  const header = reply.indexOf('\r\n');
  const length = Number(reply.slice(1, header));
  return length < 0 || Buffer.byteLength(reply) >= header + 2 + length + 2;
}

/** A port that was free a moment ago on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
