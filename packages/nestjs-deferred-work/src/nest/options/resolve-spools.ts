import { resolve } from 'node:path';
import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';
import type { DeferredSink, SinkProcessorOptions } from '../../core/sink.interface';
import type { SinkSpoolSettings } from '../../pipeline/processor/sink-spool';
import { resolveSpoolOptions } from '../../spool';
import type { DeferredSpoolOptions, DeferredWorkModuleOptions } from './module-options.interface';


function checkSpool(option: string, spool: unknown): asserts spool is DeferredSpoolOptions | false | undefined {
  if (spool === undefined || spool === false) return;
  const dir = (spool as { dir?: unknown } | null)?.dir;
  if (typeof spool !== 'object' || spool === null || typeof dir !== 'string' || dir.trim() === '') {
    throw new DeferredWorkConfigError(
      option,
      'expected { dir, maxBytes?, syncIntervalMs?, segmentBytes? } with a non-empty dir',
      `Pass ${option}: { dir: '/var/lib/my-app/spool' } (a directory on a persistent disk), or false for no spool.`,
    );
  }
}

/** A sink's directory under a module-wide spool: its name, made safe as one path segment. */
function sinkDir(dir: string, name: string): string {
  return resolve(dir, encodeURIComponent(name).replace(/^\.+/, (dots) => '%2E'.repeat(dots.length)));
}

/**
 * The spool of each sink (`spool`, over it `sinkOptions[name].spool`), checked: options in range,
 * `segmentBytes` room for the largest item, no two sinks in one directory. Unless the user set
 * `maxAttempts` (globally or for the sink; a sink's own default does not count), an item whose retries
 * are spent (`maxRetryDurationMs`) goes to the back of the spool instead of being dead-lettered: with
 * a spool the disk is the buffer, and a destination down for an hour delays items, it does not
 * dead-letter them.
 */
export function resolveSpools(
  options: DeferredWorkModuleOptions,
  sinks: ReadonlyMap<string, DeferredSink>,
  _processorOptions: Map<string, SinkProcessorOptions>,
  maxItemBytes: number,
): ReadonlyMap<string, SinkSpoolSettings> {
  checkSpool('spool', options.spool);
  const spools = new Map<string, SinkSpoolSettings>();
  const owners = new Map<string, string>();
  for (const name of sinks.keys()) {
    const own = options.sinkOptions?.[name]?.spool;
    checkSpool(`sinkOptions.${name}.spool`, own);
    const chosen = own ?? options.spool;
    if (!chosen) continue;
    const option = own ? `sinkOptions.${name}.spool` : 'spool';
    const { dir, ...rest } = chosen;
    const resolved = resolveSpoolOptions(rest, option);
    // An item's JSON is its payload (bounded by maxItemBytes) plus its fields: leave room for both.
    // segmentBytes left out follows maxBytes: only what the user set is named.
    const largest = maxItemBytes + 16 * 1024;
    if (rest.segmentBytes !== undefined && resolved.segmentBytes < largest) {
      throw new DeferredWorkConfigError(
        `${option}.segmentBytes`,
        `${resolved.segmentBytes} bytes cannot hold an item of maxItemBytes (${maxItemBytes}) with its fields`,
        `Make segmentBytes at least maxItemBytes + 16384 (${largest}), or lower maxItemBytes.`,
      );
    }
    if (resolved.maxBytes < largest) {
      throw new DeferredWorkConfigError(
        `${option}.maxBytes`,
        `${resolved.maxBytes} bytes cannot hold an item of maxItemBytes (${maxItemBytes}) with its fields`,
        `Make maxBytes at least maxItemBytes + 16384 (${largest}), or lower maxItemBytes to at most maxBytes - 16384 (${resolved.maxBytes - 16384}).`,
      );
    }
    const path = own ? resolve(dir) : sinkDir(dir, name);
    const other = owners.get(path);
    if (other !== undefined) {
      throw new DeferredWorkConfigError(
        option,
        `sinks "${other}" and "${name}" would share the spool directory ${path}`,
        'Give each sink its own directory (one spool per sink and process).',
      );
    }
    owners.set(path, name);
    // Unless the user set maxAttempts (for the sink or globally), an item that used up its attempts goes
    // to the back of the spool and is tried again later, never dead-lettered for a retryable failure.
    const explicit = options.sinkOptions?.[name]?.maxAttempts ?? options.maxAttempts;
    spools.set(name, { dir: path, ...resolved, requeue: explicit === undefined, source: { option: `${option}.dir`, given: dir } });
  }
  return spools;
}
