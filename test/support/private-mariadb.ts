import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { access, chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { createConnection } from 'mysql2/promise';
import { freePort } from './free-port';

const run = promisify(execFile);
const SERVER = '/usr/sbin/mariadbd';
const INSTALL = 'mariadb-install-db';

/**
 * Quick and small for a test server: a small redo log and buffer pool, no doublewrite, no fsync per
 * commit (a clean stop writes everything; the server is never killed mid-test).
 */
const INNODB = ['--innodb-log-file-size=8M', '--innodb-buffer-pool-size=32M', '--innodb-flush-log-at-trx-commit=0', '--innodb-doublewrite=0'];

/**
 * A private MariaDB on a free port of 127.0.0.1, in a temporary data directory, that a test may stop
 * and start again (the machine's server on :3306 is never touched). The data directory is made by
 * `mariadb-install-db` with `root` reachable over TCP without a password (`normal` authentication:
 * the `root@127.0.0.1` account, no socket plugin), and the server reads no option file
 * (`--no-defaults`). `mariadbd` refuses to run as root, so as root (CI) it runs as the `mysql` user of
 * Debian's package (`--user=mysql`, the directory given to it). Database: `test`.
 */
export class PrivateMariaDb {
  port = 0;
  private dir = '';
  private server: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}/test`;
  }

  private get asRoot(): boolean {
    return process.getuid?.() === 0;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const first = !this.dir;
    if (first) await this.install();
    const args = [
      '--no-defaults',
      `--datadir=${path.join(this.dir, 'data')}`,
      `--port=${this.port}`,
      '--bind-address=127.0.0.1',
      `--socket=${path.join(this.dir, 'sock')}`,
      `--pid-file=${path.join(this.dir, 'pid')}`,
      `--log-error=${path.join(this.dir, 'log')}`,
      '--skip-name-resolve',
      '--innodb-buffer-pool-dump-at-shutdown=0',
      '--innodb-buffer-pool-load-at-startup=0',
      ...INNODB,
      ...(this.asRoot ? ['--user=mysql'] : []),
    ];
    const server = spawn(SERVER, args, { stdio: 'ignore' });
    this.server = server;
    this.exited = new Promise((resolve) => server.once('exit', () => resolve()));
    let gone = false;
    void this.exited.then(() => (gone = true));
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const connection = await createConnection({ host: '127.0.0.1', port: this.port, user: 'root', connectTimeout: 1000 });
        if (first) await connection.query('CREATE DATABASE IF NOT EXISTS test');
        await connection.end();
        return;
      } catch (error) {
        if (gone || Date.now() > deadline) {
          this.server = undefined;
          server.kill('SIGKILL');
          throw new Error(`The private MariaDB did not accept connections on 127.0.0.1:${this.port} (${(error as Error).message}). Its log:\n${await this.log()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /** Stops the server (SIGTERM: a clean shutdown; its clients' connections are closed, as in a restart) and waits for its exit. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.kill('SIGTERM');
    await this.exited;
    this.server = undefined;
  }

  /** Kills the server if it runs, and removes its data directory. */
  async dispose(): Promise<void> {
    if (this.server) {
      this.server.kill('SIGKILL');
      await this.exited;
      this.server = undefined;
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  private async install(): Promise<void> {
    await access(SERVER).catch(() => {
      throw new Error(`No ${SERVER}: this test starts a private MariaDB it can stop. Install Debian's package: apt-get install -y mariadb-server`);
    });
    this.dir = await mkdtemp(path.join(os.tmpdir(), 'dw-mariadb-'));
    if (this.asRoot) {
      const { stdout: uid } = await run('id', ['-u', 'mysql']);
      const { stdout: gid } = await run('id', ['-g', 'mysql']);
      await chown(this.dir, Number(uid.trim()), Number(gid.trim()));
    }
    const args = [
      '--no-defaults',
      `--datadir=${path.join(this.dir, 'data')}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      '--skip-name-resolve',
      ...INNODB,
      ...(this.asRoot ? ['--user=mysql'] : []),
    ];
    try {
      await run(INSTALL, args, { timeout: 60_000 });
    } catch (error) {
      throw new Error(`${INSTALL} failed (${(error as Error).message}). Install Debian's package: apt-get install -y mariadb-server`);
    }
    this.port = await freePort();
  }

  private async log(): Promise<string> {
    const text = await readFile(path.join(this.dir, 'log'), 'utf8').catch(() => '(no log)');
    return text.split('\n').slice(-20).join('\n');
  }
}
