/** The disk spool (issue 16): a standalone storage core, not wired into the dispatcher yet. */
export { Spool, type SpoolRecord, type SpoolStats } from './spool';
export { SPOOL_DEFAULTS, type SpoolOptions } from './spool.options';
export { SpoolFullError, type SpoolFullReason } from './spool-full.error';
export { SpoolLockedError } from './spool-locked.error';
