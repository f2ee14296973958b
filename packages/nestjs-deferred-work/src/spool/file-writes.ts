import { closeSync, constants, ftruncateSync, openSync, writeSync } from 'node:fs';

/** Writes all of `buf` at `position`; on failure cuts the file back to `sizeBefore` and rethrows. */
export function writeAllAt(fd: number, buf: Buffer, position: number | null, sizeBefore: number): void {
  let done = 0;
  try {
    while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position === null ? null : position + done);
  } catch (error) {
    try {
      ftruncateSync(fd, sizeBefore);
    } catch {
      // Cutting a file shorter needs no space; should it fail, the partial frame fails its checksum on replay.
    }
    throw error;
  }
}

/** Cuts the file at `path` to `length` bytes (a torn tail found at open). */
export function truncateFile(path: string, length: number): void {
  const fd = openSync(path, constants.O_RDWR | constants.O_NOFOLLOW);
  try {
    ftruncateSync(fd, length);
    // Made durable with the next group commit would do too; a cut that is lost is only cut again.
  } finally {
    closeSync(fd);
  }
}
