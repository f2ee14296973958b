/** Why an append was refused: the spool's `maxBytes`, or the disk (ENOSPC, EDQUOT, EFBIG). */
export type SpoolFullReason = 'max-bytes' | 'disk-full';

/**
 * Thrown by `Spool.append` when the record cannot be spooled: `maxBytes` would be passed, or the OS
 * refused the write for lack of space. Nothing already spooled is damaged, and no part of the refused
 * record is left behind as a valid record. The record was not accepted; the caller counts it dropped.
 */
export class SpoolFullError extends Error {
  override readonly name = 'SpoolFullError';

  constructor(
    /** The spool's directory. */
    readonly dir: string,
    readonly reason: SpoolFullReason,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      reason === 'max-bytes'
        ? `Spool ${dir} is full (${detail}): the record was refused. It empties as sinks confirm records; raise spool.maxBytes if it fills in normal operation.`
        : `Spool ${dir}: the disk refused the write (${detail}): the record was refused. Free space on that disk, or point the spool at a larger one.`,
      options,
    );
  }
}
