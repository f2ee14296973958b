import { resolve } from 'node:path';
import type { DeadLetterStore } from '../../core/dead-letter-store.interface';
import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';
import type { DeferredSink } from '../../core/sink.interface';
import { FileDeadLetterStore } from '../../pipeline/dead-letters/file-dead-letter.store';
import { MemoryDeadLetterStore } from '../../pipeline/dead-letters/memory-dead-letter.store';
import type { ResolvedDeferredWorkOptions } from '../../pipeline/resolved-options.interface';
import type { DeadLetterOptions } from './dead-letter-options.interface';
import type { DeferredWorkModuleOptions } from './module-options.interface';
import { checkNumber, checkSinkName } from './option-checks';

/** Defaults of the `deadLetter` option's object form (documented on `DeadLetterOptions`). */
export const DEAD_LETTER_DEFAULTS = Object.freeze({
  maxCount: 10_000,
  maxBytes: 64 * 1024 * 1024,
  maxAgeMs: 7 * 24 * 3600 * 1000,
  redrivePerSecond: 100,
});

const STORE_METHODS = ['add', 'list', 'get', 'count', 'remove', 'purge'] as const;

type Resolved = Pick<ResolvedDeferredWorkOptions, 'deadLetter' | 'deadLetterStore' | 'redrivePerSecond'>;

/** The `deadLetter` option, checked: the forward, the store (built), the redrive rate. */
export function resolveDeadLetters(options: DeferredWorkModuleOptions, sinks: ReadonlyMap<string, DeferredSink>, maxItemBytes: number): Resolved {
  const given = options.deadLetter;
  const object: DeadLetterOptions = typeof given === 'object' && given !== null ? given : { forward: given };
  if (given === null || (typeof given !== 'object' && typeof given !== 'function' && typeof given !== 'string' && given !== undefined)) {
    throw new DeferredWorkConfigError('deadLetter', 'expected a function or a sink name', 'Pass deadLetter: (letters) => { ... } or the name of a configured sink.');
  }
  const forward = object.forward;
  const forwardOption = typeof given === 'object' ? 'deadLetter.forward' : 'deadLetter';
  if (typeof forward === 'string') checkSinkName(forwardOption, forward, sinks);
  else if (forward !== undefined && typeof forward !== 'function') {
    throw new DeferredWorkConfigError(forwardOption, 'expected a function or a sink name', `Pass ${forwardOption}: (letters) => { ... } or the name of a configured sink.`);
  }
  checkNumber('deadLetter.maxCount', object.maxCount, 1);
  checkNumber('deadLetter.maxBytes', object.maxBytes, 1);
  checkNumber('deadLetter.redrivePerSecond', object.redrivePerSecond, 1);
  const maxAgeMs = object.maxAgeMs ?? DEAD_LETTER_DEFAULTS.maxAgeMs;
  if (typeof maxAgeMs !== 'number' || !Number.isInteger(maxAgeMs) || maxAgeMs < 1) {
    throw new DeferredWorkConfigError('deadLetter.maxAgeMs', `expected a whole number >= 1, got ${JSON.stringify(maxAgeMs)}`, 'Pass an age in milliseconds, or leave it out for 7 days.');
  }
  const bounds = {
    maxCount: object.maxCount ?? DEAD_LETTER_DEFAULTS.maxCount,
    maxBytes: object.maxBytes ?? DEAD_LETTER_DEFAULTS.maxBytes,
    maxAgeMs,
  };
  return {
    deadLetter: forward,
    deadLetterStore: buildStore(object, options, bounds, maxItemBytes),
    redrivePerSecond: object.redrivePerSecond ?? DEAD_LETTER_DEFAULTS.redrivePerSecond,
  };
}

function buildStore(
  object: DeadLetterOptions,
  options: DeferredWorkModuleOptions,
  bounds: { maxCount: number; maxBytes: number; maxAgeMs: number },
  maxItemBytes: number,
): DeadLetterStore | undefined {
  const spoolDir = options.spool ? options.spool.dir : undefined;
  const store = object.store ?? (spoolDir !== undefined || object.dir !== undefined ? 'file' : 'memory');
  if (store === false) return undefined;
  if (store === 'memory') return new MemoryDeadLetterStore(bounds);
  if (store === 'file') {
    const dir = object.dir ?? (spoolDir === undefined ? undefined : resolve(spoolDir, '.dead-letters'));
    if (typeof dir !== 'string' || dir.trim() === '') {
      throw new DeferredWorkConfigError(
        'deadLetter.dir',
        "the 'file' store needs a directory and no module-wide spool gives one",
        "Pass deadLetter: { store: 'file', dir: '/var/lib/my-app/dead-letters' } (a persistent disk), or configure spool: { dir }.",
      );
    }
    return new FileDeadLetterStore({ dir: resolve(dir), ...bounds, maxRecordBytes: maxItemBytes + 64 * 1024 });
  }
  if (typeof store === 'object' && store !== null && STORE_METHODS.every((method) => typeof (store as unknown as Record<string, unknown>)[method] === 'function')) return store;
  throw new DeferredWorkConfigError(
    'deadLetter.store',
    `expected 'memory', 'file', false or a DeadLetterStore (an object with ${STORE_METHODS.join(', ')}), got ${typeof store === 'object' ? 'an object without them' : JSON.stringify(store)}`,
    "Pass store: 'file' (durable), 'memory', or an instance of your own class implementing DeadLetterStore.",
  );
}
