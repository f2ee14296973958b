import { createRequire } from 'node:module';
import { installedBeside, missingPackage, missingPackageError, settledNow } from './missing-package';
import { SinkConfigError } from './sink-config.error';

/** What Node's require() throws for a specifier that is not installed. */
function requireError(specifier: string): unknown {
  try {
    createRequire(import.meta.url)(specifier);
  } catch (error) {
    return error;
  }
  throw new Error(`${specifier} loaded`);
}

/** What Node's import() rejects with for a specifier that is not installed. */
async function importError(specifier: string): Promise<unknown> {
  try {
    await import(specifier);
  } catch (error) {
    return error;
  }
  throw new Error(`${specifier} loaded`);
}

describe('missingPackage', () => {
  it("reads the package from BullMQ 6's, Nest's and Node's own errors", async () => {
    const bullmq = new Error(
      "BullMQ could not load the optional 'ioredis' package. Install it with `npm install ioredis`, or provide a different Redis client instance (e.g. node-redis) via the connection option.",
    );
    expect(missingPackage(bullmq)).toBe('ioredis');
    expect(missingPackage(new Error("The PostgreSQL backend could not load the optional 'pg' package. Install it with `npm install pg`."))).toBe('pg');
    expect(missingPackage(new Error('The "kafkajs" package is missing. Please, make sure to install it to use ClientKafka.'))).toBe('kafkajs');
    expect(missingPackage(requireError('dw-not-installed-package/lib/x'))).toBe('dw-not-installed-package');
    expect(missingPackage(requireError('@dw-not-installed/client-x'))).toBe('@dw-not-installed/client-x');
    expect(missingPackage(await importError('dw-not-installed-package'))).toBe('dw-not-installed-package');
  });

  it('is undefined for a missing file, a built-in and any other error', () => {
    expect(missingPackage(requireError('./no-such-file'))).toBeUndefined();
    expect(missingPackage(new Error("Cannot find module '/abs/path/index.js'"))).toBeUndefined();
    expect(missingPackage(new Error("Cannot find module 'node:nothing'"))).toBeUndefined();
    expect(missingPackage(new Error('connect ECONNREFUSED 127.0.0.1:6379'))).toBeUndefined();
    expect(missingPackage(undefined)).toBeUndefined();
    expect(missingPackage('ioredis')).toBeUndefined();
  });
});

describe('missingPackageError', () => {
  it('names the sink, the package, what needs it and the install command', () => {
    const error = missingPackageError({
      sink: 'BullMqSink "bullmq"',
      packageName: 'ioredis',
      neededBy: 'BullMQ loads it to connect queue "mail" to Redis',
      consequence: 'the queue can never connect',
      otherwise: 'give BullMQ another client',
    });
    expect(error).toBeInstanceOf(SinkConfigError);
    expect(error.message).toBe(
      'BullMqSink "bullmq": the "ioredis" package is not installed. BullMQ loads it to connect queue "mail" to Redis; without it the queue can never ' +
        'connect. Install it in the app: npm install ioredis — or give BullMQ another client.',
    );
  });
});

describe('settledNow', () => {
  it('tells a promise that already failed or succeeded from one still pending, within a turn', async () => {
    const failed = Promise.reject(new Error('no package'));
    await expect(settledNow(failed)).resolves.toEqual({ state: 'rejected', reason: new Error('no package') });
    await expect(settledNow(Promise.resolve(1))).resolves.toEqual({ state: 'fulfilled', value: 1 });
    const started = Date.now();
    await expect(settledNow(new Promise(() => undefined))).resolves.toEqual({ state: 'pending' });
    expect(Date.now() - started).toBeLessThan(100);
  });
});

describe('installedBeside', () => {
  it("resolves a package where another package loads it from, as Node's resolution does", () => {
    // @nestjs/microservices loads ioredis for its Redis transport; this workspace has both.
    expect(installedBeside('ioredis', '@nestjs/microservices')).toBe(true);
    expect(installedBeside('dw-not-installed-package', '@nestjs/microservices')).toBe(false);
    expect(installedBeside('ioredis', 'dw-not-installed-owner')).toBeUndefined();
  });
});
