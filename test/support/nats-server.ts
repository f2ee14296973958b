import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from './free-port';

/**
 * A private `nats-server` for tests: its own free port on 127.0.0.1 (`nats-server -a 127.0.0.1 -p <port>`),
 * never a shared one. The binary is `nats-server` on the PATH, or `$NATS_SERVER_BIN`; if it cannot start,
 * `start()` throws an error that says how to provide one (tests fail, never skip).
 */
export class NatsServer {
  port = 0;
  readonly host = '127.0.0.1';
  private child: ChildProcess | undefined;
  private output = '';
  private readonly bin = process.env.NATS_SERVER_BIN || 'nats-server';

  get url(): string {
    return `nats://${this.host}:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.child) return;
    if (this.port === 0) this.port = await freePort();
    const child = spawn(this.bin, ['-a', this.host, '-p', String(this.port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => reject(this.howToFix(error.code === 'ENOENT' ? 'not found' : error.message)));
      child.once('exit', (code) => reject(this.howToFix(`exited at start (code ${code}): ${this.output.trim().slice(-300)}`)));
    });
    failed.catch(() => undefined);
    try {
      await Promise.race([this.waitForPort(5000), failed]);
    } catch (error) {
      child.kill('SIGKILL');
      this.child = undefined;
      throw error;
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  private async waitForPort(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const open = await new Promise<boolean>((resolve) => {
        const socket = createConnection({ host: this.host, port: this.port });
        socket.once('connect', () => (socket.destroy(), resolve(true)));
        socket.once('error', () => resolve(false));
      });
      if (open) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw this.howToFix(`was not listening within ${timeoutMs} ms`);
  }

  private howToFix(problem: string): Error {
    return new Error(
      `Cannot start a private NATS server for the tests: "${this.bin}" ${problem}. ` +
        'Install one (Debian/Ubuntu: apt-get install nats-server) or point NATS_SERVER_BIN at the binary.',
    );
  }
}

