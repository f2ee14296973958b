import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { SinkConfigError } from './sink-config.error';

/**
 * A client library that loads a package only when it first connects (BullMQ 6 loads `ioredis`, Nest 12's
 * Redis and Kafka transports load `ioredis` and `kafkajs`) lets the app start without it: the sink then
 * meets a client that can never connect. These find out at bootstrap, so that it fails naming the
 * package and the command that installs it.
 */

/** What libraries and Node say when a package is not installed; the package's specifier is group 1. */
const MISSING = [
  /could not load the optional '([^']+)' package/, // BullMQ 6: ioredis (pg for its PostgreSQL backend)
  /The "([^"]+)" package is missing/, // Nest's loadPackage (before it exits the process)
  /Cannot find (?:module|package) '([^']+)'/, // Node: require (MODULE_NOT_FOUND), import (ERR_MODULE_NOT_FOUND)
];

/** The package of a bare specifier (`ioredis/built/x` → `ioredis`, `@aws-sdk/client-sqs/dist` → `@aws-sdk/client-sqs`); `undefined` for a path or a built-in. */
function packageOf(specifier: string): string | undefined {
  if (/^(\.|\/|[a-zA-Z]:[\\/]|file:|node:)/.test(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? (parts.length >= 2 ? `${parts[0]}/${parts[1]}` : undefined) : parts[0];
}

/**
 * The package a load error says is not installed (`ioredis`, `@scope/name`), or `undefined` when the
 * error is another one (a file missing inside a package, a syntax error, a refused connection).
 */
export function missingPackage(error: unknown): string | undefined {
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message !== 'string') return undefined;
  for (const pattern of MISSING) {
    const specifier = pattern.exec(message)?.[1];
    if (specifier) return packageOf(specifier);
  }
  return undefined;
}

/** What a {@link missingPackageError} says. */
export interface MissingPackageProblem {
  /** The sink, as messages name it, e.g. `BullMqSink "bullmq"`. */
  sink: string;
  /** The package that is not installed, e.g. `ioredis`. */
  packageName: string;
  /** What needs it and what for, e.g. `BullMQ loads it to connect queue "mail" to Redis`. */
  neededBy: string;
  /** What happens without it, e.g. `the queue can never connect, and no job would be added`. */
  consequence: string;
  /** Another fix besides installing it, when there is one. */
  otherwise?: string;
  /** The option involved, when there is one. */
  option?: string;
}

/** The bootstrap error for a client package that is not installed: what is missing, what for, and the command that installs it. */
export function missingPackageError(problem: MissingPackageProblem): SinkConfigError {
  const { sink, packageName, neededBy, consequence, otherwise, option } = problem;
  return new SinkConfigError(
    `${sink}: the "${packageName}" package is not installed. ${neededBy}; without it ${consequence}. ` +
      `Install it in the app: npm install ${packageName}${otherwise ? ` — or ${otherwise}` : ''}.`,
    option,
  );
}

/** How a promise stands by the next turn of the event loop. */
export type SettledNow = { state: 'fulfilled'; value: unknown } | { state: 'rejected'; reason: unknown } | { state: 'pending' };

/**
 * How `promise` stands once the callbacks already due have run (one turn of the event loop, never
 * longer): a client that failed as it was created (its package missing) has rejected by then, while
 * one still connecting is `pending` — a server that is down does not hold the bootstrap up.
 */
export function settledNow(promise: PromiseLike<unknown>): Promise<SettledNow> {
  return Promise.race([
    Promise.resolve(promise).then(
      (value): SettledNow => ({ state: 'fulfilled', value }),
      (reason: unknown): SettledNow => ({ state: 'rejected', reason }),
    ),
    new Promise<SettledNow>((resolve) => setImmediate(() => resolve({ state: 'pending' }))),
  ]);
}

/** This module's file: where the library's own imports resolve from. */
function here(): string {
  // __filename in the CommonJS build (tsup's import.meta.url shim breaks on a '#' in the path)
  return typeof __filename === 'string' ? __filename : fileURLToPath(import.meta.url);
}

/**
 * Whether `packageName` is installed where `owner` — a package this library loads too, e.g.
 * `@nestjs/microservices` — would load it from (what `owner`'s own `require()` or `import()` finds):
 * `false` only when Node says it is not found there; `undefined` when that cannot be told (`owner`
 * not found from here, as in a bundled app). A package found but not `require`-able (an ES module with
 * no `require` export) counts as installed.
 */
export function installedBeside(packageName: string, owner: string): boolean | undefined {
  let ownerFile: string;
  try {
    ownerFile = createRequire(here()).resolve(owner);
  } catch {
    return undefined;
  }
  try {
    createRequire(ownerFile).resolve(packageName);
    return true;
  } catch (error) {
    return missingPackage(error) === packageName ? false : true;
  }
}
