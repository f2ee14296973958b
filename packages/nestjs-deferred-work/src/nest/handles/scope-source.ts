import type { DeferredScope } from '../../capture/deferred-scope.interface';
import type { DeferredHandles } from './deferred-handles';

/**
 * Where handles made without dependency injection (`new DeferredLogger(MyService.name)`) find the
 * current scope: the running application's `DeferredWork`, set at bootstrap and cleared at shutdown.
 * With several applications in one process, the last one bootstrapped.
 */
let source: (() => DeferredScope) | undefined;

/** Sets where to find the current scope; returns a function that clears it (only if it is still this one). */
export function provideScopeSource(current: () => DeferredScope): () => void {
  source = current;
  return () => {
    if (source === current) source = undefined;
  };
}

/** The current scope, or `undefined` when no application is running. */
export function currentScope(): DeferredScope | undefined {
  return source?.();
}

let handles: DeferredHandles | undefined;

/** Sets the running application's handle builder (for the handles' parameter decorators); returns what clears it. */
export function provideHandles(builder: DeferredHandles): () => void {
  handles = builder;
  return () => {
    if (handles === builder) handles = undefined;
  };
}

/** The running application's handle builder, or `undefined`. */
export function currentHandles(): DeferredHandles | undefined {
  return handles;
}
