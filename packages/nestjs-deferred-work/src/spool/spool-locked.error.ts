import { resolve } from 'node:path';

/**
 * Thrown by `Spool.open` when another live process holds the spool's directory: one process per spool
 * directory. The message names the directory, the holder's pid and the fix.
 */
export class SpoolLockedError extends Error {
  override readonly name = 'SpoolLockedError';

  constructor(
    /** The spool's directory. */
    readonly dir: string,
    /** The pid written in the lock file, alive when checked. */
    readonly pid: number,
    /** The option and directory the user gave, when `dir` is a sink's folder under it. */
    source?: { option: string; given: string },
  ) {
    const under = source && resolve(source.given) !== resolve(dir) ? ` (sink folder under ${source.option} ${source.given})` : '';
    super(
      `Spool directory ${dir}${under} is locked by process ${pid}, which is running: one process per spool directory. ` +
        `Give each process (each replica, each worker of a cluster) its own spool dir${source ? ` (${source.option})` : ''}, or stop process ${pid}. ` +
        `If no process uses this spool (the pid was reused by another program), delete ${dir}/spool.lock.`,
    );
  }
}
