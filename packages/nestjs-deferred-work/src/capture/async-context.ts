import { AsyncLocalStorage } from 'node:async_hooks';
import type { DeferredScope } from './deferred-scope.interface';

/**
 * @internal
 * The opt-in (`asyncContext: true`) store that lets the injectable `DeferredWork` find the current
 * request's scope anywhere in its call chain. Created only when enabled: on Node 20, the first
 * `run()` turns on promise hooks for the whole process (10–25% more CPU per request measured).
 */
export class DeferredAsyncContext {
  private readonly storage = new AsyncLocalStorage<DeferredScope>();

  run<T>(scope: DeferredScope, fn: () => T): T {
    return this.storage.run(scope, fn);
  }

  current(): DeferredScope | undefined {
    return this.storage.getStore();
  }
}
