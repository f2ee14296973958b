import { closeSync, constants, mkdirSync, openSync, readFileSync, statSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import { DeferredWorkConfigError } from '../core/errors/deferred-work-config.error';

/** How the user named a spool's directory, for messages: the option and the path given there. */
export interface SpoolDirSource {
  /** The option, e.g. `spool.dir` or `sinkOptions.bull.spool.dir`. Default `spool.dir`. */
  option: string;
  /** The directory given in that option (a sink's spool is a folder under it). Default: the spool's directory. */
  given: string;
}

/** Files of a spool: owner read and write only (they hold the users' payloads). */
export const SPOOL_FILE_MODE = 0o600;

/** Never follow a symbolic link planted in a spool directory: opening one fails with ELOOP. */
export const NO_FOLLOW = constants.O_NOFOLLOW;

/** What to do about an error of the spool directory, by code. */
function fixFor(code: string | undefined, source: SpoolDirSource): string {
  switch (code) {
    case 'ENOTDIR':
    case 'EEXIST':
      return `A part of that path is a file, not a directory: point ${source.option} at a directory (or move the file away).`;
    case 'EACCES':
    case 'EPERM':
      return `The process may not write there: point ${source.option} at a directory it owns, or give its user write access (chown / chmod u+rwx).`;
    case 'EROFS':
      return `That file system is read-only: point ${source.option} at a writable, persistent volume.`;
    case 'ELOOP':
      return 'The spool never follows a symbolic link in its directory: remove the link (the spool writes only its own regular files there).';
    default:
      return `Point ${source.option} at a writable directory on a persistent disk.`;
  }
}

/** `dir`, and the directory the user gave when `dir` is a sink's folder under it. */
function describe(dir: string, source: SpoolDirSource): string {
  return resolve(source.given) === resolve(dir) ? dir : `${dir} (sink folder under ${source.option} ${source.given})`;
}

/** A configuration error for `error`, met creating or using the spool directory `dir`. */
export function spoolDirError(dir: string, source: SpoolDirSource, error: unknown): DeferredWorkConfigError {
  const { code, message } = error as NodeJS.ErrnoException;
  return new DeferredWorkConfigError(source.option, `cannot use the spool directory ${describe(dir, source)}: ${message}`, fixFor(code, source));
}

/**
 * Creates `dir` (mode 0700, parents too) when missing and checks it: a directory that other users
 * cannot write to (they could plant files or links among the spool's). Throws
 * `DeferredWorkConfigError` naming `source.option`, the path and the fix.
 */
export function prepareSpoolDir(dir: string, source: SpoolDirSource): void {
  let stat: Stats;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    stat = statSync(dir);
  } catch (error) {
    throw spoolDirError(dir, source, error);
  }
  if (!stat.isDirectory()) {
    throw new DeferredWorkConfigError(source.option, `the spool path ${describe(dir, source)} is not a directory`, fixFor('ENOTDIR', source));
  }
  const mode = stat.mode & 0o777;
  if ((mode & 0o002) !== 0) {
    throw new DeferredWorkConfigError(
      source.option,
      `the spool directory ${describe(dir, source)} is writable by every user (mode ${mode.toString(8).padStart(3, '0')})`,
      `It holds the app's payloads: run chmod 700 ${dir} (or chmod o-w), or point ${source.option} at a directory of the app's own.`,
    );
  }
}

/** The whole file at `path`, never read through a symbolic link (ELOOP). */
export function readNoFollow(path: string): Buffer {
  const fd = openSync(path, constants.O_RDONLY | NO_FOLLOW);
  try {
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
