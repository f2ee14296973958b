/**
 * The benchmark server as a child process (`src/server/main.ts`, its configuration in
 * `BENCH_SERVER_CONFIG`), for the runner (`run.ts`) and the profiler (`profile.ts`): started and
 * awaited until it reports its port, stopped over IPC (SIGKILL after 20 s), and read through its
 * undecorated `/__bench/stats` route.
 */
import { type ChildProcess, fork } from 'node:child_process';
import type { ServerConfig, ServerSnapshot } from './types.js';

export interface ServerHandle {
  base: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Forks `entry` with `config`; resolves once it listens, rejects if it fails or exits first (30 s at most). */
export function forkServer(entry: string, config: ServerConfig, execArgv: string[] = [], label = 'the benchmark server'): Promise<ServerHandle> {
  const child = fork(entry, [], {
    env: { ...process.env, BENCH_SERVER_CONFIG: JSON.stringify(config), NODE_ENV: 'production' },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.send({ type: 'stop' });
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not start within 30 s`));
    }, 30_000);
    child.on('message', (message: { type: string; port?: number; message?: string }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve({ base: `http://127.0.0.1:${message.port}`, child, stop });
      } else if (message.type === 'error') {
        clearTimeout(timer);
        reject(new Error(`${label} failed to start: ${message.message}`));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${signal ?? `code ${code}`}) before it was ready`));
    });
  });
}

/** The server's CPU, counters and `stats()`; with `flush`, after it drained what is pending. */
export async function snapshot(server: ServerHandle, flush: boolean): Promise<ServerSnapshot> {
  const response = await fetch(`${server.base}/__bench/stats${flush ? '?flush=1' : ''}`, { signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`/__bench/stats answered ${response.status}`);
  return (await response.json()) as ServerSnapshot;
}
