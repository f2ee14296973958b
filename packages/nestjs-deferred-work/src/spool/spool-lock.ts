import { closeSync, constants, openSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NO_FOLLOW, readNoFollow, SPOOL_FILE_MODE, spoolDirError, type SpoolDirSource } from './spool-dir';
import { SpoolLockedError } from './spool-locked.error';

/** The lock file's name in a spool directory; it holds the owner's pid. */
export const LOCK_FILE = 'spool.lock';

/** Lock files this process holds (a second `Spool.open` of one directory in one process is refused too). */
const held = new Set<string>();

/** How long an empty lock file (its creator between `open` and `write`) is waited for before it counts as stale. */
const EMPTY_LOCK_GRACE_MS = 1000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in the lock file; `undefined` when it is gone, `NaN` when it is empty or not a pid. */
function readPid(path: string): number | undefined {
  try {
    const text = readNoFollow(path).toString('utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : NaN;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * One process per spool directory: `spool.lock`, created with `open(..., 'wx')` and holding the pid.
 * A lock whose process is dead (kill -9, OOM, a crash) is taken over; so is one naming this very pid
 * that this process does not hold (a restarted container reuses pid 1). A live holder is refused with
 * `SpoolLockedError`.
 */
export class SpoolLock {
  private released = false;

  private constructor(
    /** The lock file's path. */
    readonly path: string,
  ) {}

  /**
   * Takes the lock of `dir` (which must exist); throws `SpoolLockedError` when a live process holds it
   * (naming `source`, the option and directory the user gave, when `dir` is a sink's folder under it).
   */
  static acquire(dir: string, source?: SpoolDirSource): SpoolLock {
    const path = resolve(join(dir, LOCK_FILE));
    if (held.has(path)) throw new SpoolLockedError(dir, process.pid, source);
    let emptySince: number | undefined;
    for (;;) {
      let fd: number;
      try {
        fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NO_FOLLOW, SPOOL_FILE_MODE);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw source ? spoolDirError(dir, source, error) : error;
        const pid = readPid(path);
        if (pid === undefined) continue; // released in between: try again
        if (Number.isNaN(pid)) {
          emptySince ??= Date.now();
          if (Date.now() - emptySince < EMPTY_LOCK_GRACE_MS) {
            sleepSync(10);
            continue;
          }
        } else if (pid !== process.pid && isAlive(pid)) {
          throw new SpoolLockedError(dir, pid, source);
        }
        // Stale: its process is dead. Remove it only if it still names that process, then race for it.
        const again = readPid(path);
        if (again === pid || (Number.isNaN(again!) && Number.isNaN(pid))) {
          try {
            unlinkSync(path);
          } catch (unlinkError) {
            if ((unlinkError as NodeJS.ErrnoException).code !== 'ENOENT') throw unlinkError;
          }
        }
        emptySince = undefined;
        continue;
      }
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      held.add(path);
      return new SpoolLock(path);
    }
  }

  /** Releases the lock (idempotent); a lock file that no longer names this process is left alone. */
  release(): void {
    if (this.released) return;
    this.released = true;
    held.delete(this.path);
    if (readPid(this.path) === process.pid) unlinkSync(this.path);
  }
}
