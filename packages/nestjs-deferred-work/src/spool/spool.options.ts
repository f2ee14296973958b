import { DeferredWorkConfigError } from '../core/errors/deferred-work-config.error';

/** Options of `Spool.open(dir, options)`; every one optional. */
export interface SpoolOptions {
  /**
   * Most bytes the spool keeps on disk (segment and ack files together). An append that would pass
   * it is refused with `SpoolFullError`; what is spooled is untouched. Default 256 MiB.
   */
  maxBytes?: number;
  /**
   * Group commit: appends and acks are fsynced together at most this long after the first of them,
   * one fsync per file per interval rather than one per record. It bounds what a power loss or kernel
   * crash can lose (what was appended in the last interval); a kill -9 (or any other death of the
   * process) loses at most what was appended in the event-loop turn it strikes, since each turn's
   * records are written to the OS at its end, whatever this interval. `0` syncs once per event-loop
   * turn. Default 200 ms.
   */
  syncIntervalMs?: number;
  /**
   * A segment file is closed and a new one started once it holds this many bytes; a segment is
   * deleted when all of its records are acked. Also the largest record (frame header included).
   * Default 8 MiB, or `maxBytes` when that is smaller.
   */
  segmentBytes?: number;
}

/** `SpoolOptions` with every default applied. */
export type ResolvedSpoolOptions = Required<SpoolOptions>;

/** The defaults of `SpoolOptions`. */
export const SPOOL_DEFAULTS: ResolvedSpoolOptions = Object.freeze({
  maxBytes: 256 * 1024 * 1024,
  syncIntervalMs: 200,
  segmentBytes: 8 * 1024 * 1024,
});

function check(prefix: string, name: keyof SpoolOptions, value: number, min: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new DeferredWorkConfigError(
      `${prefix}.${name}`,
      `expected ${what}, got ${String(value)}`,
      `Set it to ${what}, or leave it out for the default (${SPOOL_DEFAULTS[name]}).`,
    );
  }
  return value;
}

/**
 * `options` with defaults applied; throws `DeferredWorkConfigError` naming a bad one (as
 * `<prefix>.<option>`, default prefix `spool`) and its fix.
 */
export function resolveSpoolOptions(options: SpoolOptions = {}, prefix = 'spool'): ResolvedSpoolOptions {
  const maxBytes = check(prefix, 'maxBytes', options.maxBytes ?? SPOOL_DEFAULTS.maxBytes, 1024, 'an integer of bytes >= 1024');
  // Left out, a segment is 8 MiB, or maxBytes when that is smaller.
  const segmentBytes = check(prefix, 'segmentBytes', options.segmentBytes ?? Math.min(SPOOL_DEFAULTS.segmentBytes, maxBytes), 256, 'an integer of bytes >= 256');
  const syncIntervalMs = check(prefix, 'syncIntervalMs', options.syncIntervalMs ?? SPOOL_DEFAULTS.syncIntervalMs, 0, 'an integer of milliseconds >= 0');
  if (segmentBytes > maxBytes) {
    throw new DeferredWorkConfigError(
      `${prefix}.segmentBytes`,
      `${segmentBytes} is larger than maxBytes (${maxBytes})`,
      'Make segmentBytes at most maxBytes (a few segments fit in maxBytes when it is 8x or more).',
    );
  }
  return { maxBytes, syncIntervalMs: Math.min(syncIntervalMs, 2_147_483_647), segmentBytes };
}
