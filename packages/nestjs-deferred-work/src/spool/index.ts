/** The disk spool: storage only (segments, checksums, acks, the lock); `pipeline/processor/sink-spool.ts` wires it to a sink. */
export { Spool } from './spool';
export type { SpoolRecord, SpoolStats } from './spool-stats';
export { SPOOL_DEFAULTS, resolveSpoolOptions, type ResolvedSpoolOptions, type SpoolOptions } from './spool.options';
export { SpoolFullError, type SpoolFullReason } from './spool-full.error';
export { SpoolLockedError } from './spool-locked.error';
export type { SpoolDirSource } from './spool-dir';
