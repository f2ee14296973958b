import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSpoolForChildren } from '../../../../test/support/build-spool';
import { Spool } from './spool';
import { SpoolLockedError } from './spool-locked.error';

/**
 * The spool against real processes: a child (`test/fixtures/spool/spool-child.mjs`, running the real
 * spool compiled to CommonJS) is SIGKILLed mid-append, holds the lock while another process opens the
 * directory, and writes into a file size limit (`ulimit -f`: the OS refuses the write, EFBIG, after a
 * partial write — the same path as ENOSPC).
 */
const FIXTURE = fileURLToPath(new URL('../../../../test/fixtures/spool/spool-child.mjs', import.meta.url));
const record = (n: number) => `rec-${n}-`.padEnd(1500, 'x');

let compiled: string;
let dir: string;
const children: ChildProcess[] = [];
beforeAll(() => {
  compiled = buildSpoolForChildren();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'spool-process-'));
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Child {
  process: ChildProcess;
  lines: string[];
  /** Resolves with the first line matching `pattern`. */
  line(pattern: RegExp): Promise<string>;
  exited: Promise<void>;
}

function start(mode: string, options: object = {}, fileSizeLimitKiB?: number): Child {
  const args = [FIXTURE, compiled, dir, mode, JSON.stringify(options)];
  const child =
    fileSizeLimitKiB === undefined
      ? spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('bash', ['-c', `ulimit -f ${fileSizeLimitKiB} && exec "$0" "$@"`, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  const listeners: Array<() => void> = [];
  let buffered = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
    for (const listener of listeners) listener();
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    process: child,
    lines,
    exited,
    line: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find((line) => pattern.test(line));
          if (found !== undefined) resolve(found);
        };
        listeners.push(check);
        check();
        void exited.then(() => setTimeout(() => reject(new Error(`child exited without ${pattern}: ${stderr}`)), 50));
      }),
  };
}

async function kill9(child: Child): Promise<void> {
  child.process.kill('SIGKILL');
  await child.exited;
}

describe('Spool across processes', () => {
  it('kill -9 mid-append: every record reported synced is replayed, in order, with no garbage', async () => {
    for (const delayMs of [0, 7, 23]) {
      rmSync(dir, { recursive: true, force: true });
      const child = start('crash', { syncIntervalMs: 20, segmentBytes: 256 * 1024 });
      await child.line(/^synced (1[0-9]{3}|[2-9][0-9]{3}|\d{5,})$/); // at least ~1,000 synced, a few segments
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await kill9(child);
      expect(child.process.signalCode).toBe('SIGKILL');
      const reported = Math.max(...child.lines.filter((l) => l.startsWith('synced ')).map((l) => Number(l.slice(7))));

      const spool = Spool.open(dir);
      const replayed = [...spool.replay()];
      const stats = spool.stats();
      await spool.close();
      expect(replayed.length).toBeGreaterThanOrEqual(reported + 1); // records 0..reported at least
      replayed.forEach((r, n) => {
        expect(r.seq).toBe(n + 1);
        if (r.payload.toString() !== record(n)) throw new Error(`record ${n} is garbage: ${r.payload.subarray(0, 40).toString()}`);
      });
      expect(stats.pendingRecords).toBe(replayed.length);
      expect(stats.tornRecords).toBeLessThanOrEqual(1); // a torn tail, if the kill cut a write
    }
  });

  it('a second process on a directory whose owner is alive gets a clear error; once the owner is killed, the lock is taken over', async () => {
    const owner = start('hold');
    await owner.line(/^locked \d+$/);
    let refusal: unknown;
    try {
      Spool.open(dir);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(SpoolLockedError);
    expect(refusal).toMatchObject({ pid: owner.process.pid, dir });
    expect((refusal as Error).message).toContain(`Spool directory ${dir} is locked by process ${owner.process.pid}, which is running`);
    expect((refusal as Error).message).toMatch(/one process per spool directory.*its own spool dir/);

    // A second child too (a real second process, not just this one).
    const second = start('hold');
    await expect(second.line(/^locked/)).rejects.toThrow(/SpoolLockedError: .* locked by process/);

    await kill9(owner);
    const spool = Spool.open(dir);
    expect(readFileSync(join(dir, 'spool.lock'), 'utf8').trim()).toBe(String(process.pid));
    await spool.close();
  });

  it('the OS refusing a write (file size limit: a partial write, then EFBIG): the records it took are kept whole, no partial record is left, and the next append is a disk-full refusal', async () => {
    const child = start('fill', { segmentBytes: 1024 * 1024 }, 64);
    const result = JSON.parse(await child.line(/^\{/)) as {
      reason: string;
      code: string;
      message: string;
      appended: number;
      stats: { refused: number; writeErrors: number; unwrittenBytes: number };
    };
    await child.exited;
    expect(result).toMatchObject({ reason: 'disk-full', code: 'EFBIG', stats: { refused: 1 } });
    expect(result.message).toMatch(/the disk refused the write .*Free space/);
    const fit = Math.floor((64 * 1024) / (1500 + 24));
    // The record whose write the OS refused had been accepted (its turn's write comes after): it was
    // held in memory, retried, and still unwritten when the process ended; the next one was refused.
    expect(result.appended).toBe(fit + 1);
    expect(result.stats.writeErrors).toBeGreaterThanOrEqual(2);
    expect(result.stats.unwrittenBytes).toBe(1500 + 24);

    let spool = Spool.open(dir);
    expect(spool.stats().tornRecords).toBe(0);
    expect([...spool.replay()].map((r) => r.payload.toString())).toEqual(Array.from({ length: fit }, (_, n) => record(n)));
    spool.append('after the disk was freed');
    await spool.close();
    spool = Spool.open(dir);
    expect([...spool.replay()].at(-1)!.payload.toString()).toBe('after the disk was freed');
    expect(spool.stats().pendingRecords).toBe(fit + 1);
    await spool.close();
  });
});
