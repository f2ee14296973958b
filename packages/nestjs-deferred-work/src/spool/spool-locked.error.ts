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
  ) {
    super(
      `Spool directory ${dir} is locked by process ${pid}, which is running: one process per spool directory. ` +
        `Give each process (each replica, each worker of a cluster) its own spool dir, or stop process ${pid}. ` +
        `If no process uses this spool (the pid was reused by another program), delete ${dir}/spool.lock.`,
    );
  }
}
