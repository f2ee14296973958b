import { expect } from '@jest/globals';
import { DeferredWorkConfigError } from '../../packages/nestjs-deferred-work/src/core/errors/deferred-work-config.error';

/** Runs `fn`, expects it to throw a `DeferredWorkConfigError`, and returns it (for its message). */
export function configError(fn: () => unknown): DeferredWorkConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DeferredWorkConfigError);
    return error as DeferredWorkConfigError;
  }
  throw new Error('expected a DeferredWorkConfigError');
}
