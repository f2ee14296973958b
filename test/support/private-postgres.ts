import { execFile } from 'node:child_process';
import { chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port';

const run = promisify(execFile);

/** Where Debian's PostgreSQL package puts `initdb` and `pg_ctl` (the newest version installed). */
async function binDir(): Promise<string> {
  const root = '/usr/lib/postgresql';
  const versions = await readdir(root).catch(() => [] as string[]);
  const newest = versions.filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) {
    throw new Error(`No PostgreSQL server binaries under ${root}: this test starts a private PostgreSQL it can stop. Install Debian's package: apt-get install -y postgresql`);
  }
  return path.join(root, newest, 'bin');
}

/**
 * A private PostgreSQL on a free port of 127.0.0.1, in a temporary data directory, that a test may
 * stop and start again (the machine's server is never touched). `initdb` refuses to run as root, so
 * as root (CI) the server runs as the `postgres` user of the Debian package.
 */
export class PrivatePostgres {
  port = 0;
  private dir = '';
  private bin = '';
  private running = false;

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private async asServerUser(command: string, args: string[]): Promise<void> {
    const file = path.join(this.bin, command);
    if (process.getuid?.() === 0) await run('runuser', ['-u', 'postgres', '--', file, ...args]);
    else await run(file, args);
  }

  async start(): Promise<void> {
    if (!this.dir) {
      this.bin = await binDir();
      this.dir = await mkdtemp(path.join(os.tmpdir(), 'dw-pg-'));
      if (process.getuid?.() === 0) {
        const { stdout } = await run('id', ['-u', 'postgres']);
        const { stdout: gid } = await run('id', ['-g', 'postgres']);
        await chown(this.dir, Number(stdout.trim()), Number(gid.trim()));
      }
      await this.asServerUser('initdb', ['-D', path.join(this.dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync']);
      this.port = await freePort();
    }
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c fsync=off`;
    await this.asServerUser('pg_ctl', ['-D', path.join(this.dir, 'data'), '-o', options, '-l', path.join(this.dir, 'log'), '-w', 'start']);
    this.running = true;
  }

  /** Stops the server (fast shutdown: connections are closed, as in a restart). */
  async stop(): Promise<void> {
    if (!this.running) return;
    await this.asServerUser('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
    this.running = false;
  }

  async dispose(): Promise<void> {
    await this.stop().catch(() => undefined);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
