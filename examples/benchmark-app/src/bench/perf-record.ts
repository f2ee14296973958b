/**
 * Linux `perf` for `profile.js --mode perf`: recording one thread with `perf record -e cpu-clock`
 * (samples only while it runs) and reading the samples back with `perf script`.
 */
import { spawn } from 'node:child_process';

/** Runs `perf <args>` to its end; rejects with what it printed when it fails or cannot start. */
export function runPerf(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('perf', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', (error) => reject(new Error(`perf could not start (${error.message}); install Debian's linux-perf for --mode perf`)));
    child.once('exit', (code) => (code === 0 ? resolve(Buffer.concat(out).toString('utf8')) : reject(new Error(`perf ${args[0]} exited with ${code}: ${Buffer.concat(err).toString('utf8').slice(-500)}`))));
  });
}

/** `perf record` of one thread until `stop()`; resolves once perf has written its file. */
export async function recordThread(tid: number, file: string): Promise<{ stop(): Promise<void> }> {
  const child = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '4999', '-g', '-t', String(tid), '-o', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (b: Buffer) => err.push(b));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', (error) => reject(new Error(`perf could not start (${error.message}); install Debian's linux-perf for --mode perf`)));
    child.once('exit', (code) => resolve(code));
  });
  // perf needs a moment to attach; it exits at once when it cannot
  const early = await Promise.race([exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 500))]);
  if (early !== 'running') throw new Error(`perf record exited with ${early}: ${Buffer.concat(err).toString('utf8').slice(-500)}`);
  return {
    async stop() {
      child.kill('SIGINT');
      const code = await exited;
      if (code !== 0 && code !== null) throw new Error(`perf record exited with ${code}: ${Buffer.concat(err).toString('utf8').slice(-500)}`);
    },
  };
}
