import { openSync, readSync } from 'node:fs';

let fd: number | undefined;
let unavailable = false;
const buffer = Buffer.alloc(96);

/**
 * CPU time this thread has run, in ms: the first field of Linux's `/proc/thread-self/schedstat`
 * (nanoseconds on a CPU). Node 20 has no per-thread CPU clock (`process.cpuUsage()` counts every
 * thread), so the worker reads its own: the file is opened once (in this thread, so it stays this
 * thread's) and read with one `pread` per call. `undefined` where the file does not exist (not Linux).
 */
export function threadCpuMs(): number | undefined {
  if (unavailable) return undefined;
  try {
    fd ??= openSync('/proc/thread-self/schedstat', 'r');
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.toString('latin1', 0, length);
    return Number(text.slice(0, text.indexOf(' '))) / 1e6;
  } catch {
    unavailable = true;
    return undefined;
  }
}
