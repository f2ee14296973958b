import { readFileSync } from 'node:fs';

let unavailable = false;

/**
 * CPU time this thread has run, in ms: the first field of Linux's `/proc/thread-self/schedstat`
 * (nanoseconds on a CPU). Node 20 has no per-thread CPU clock (`process.cpuUsage()` counts every
 * thread), so the worker reads its own. `undefined` where the file does not exist (not Linux).
 */
export function threadCpuMs(): number | undefined {
  if (unavailable) return undefined;
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ', 1)[0]) / 1e6;
  } catch {
    unavailable = true;
    return undefined;
  }
}
