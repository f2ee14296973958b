/** The OS saying there is no room: the disk, a quota, a file size limit. */
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** Whether `error` is the OS refusing a write for want of room (what the spool turns into `SpoolFullError`). */
export function isDiskFull(error: unknown): error is NodeJS.ErrnoException {
  return DISK_FULL_CODES.has((error as NodeJS.ErrnoException)?.code ?? '');
}
