import { type Observable, of } from 'rxjs';
import type { DeferredScope } from '../../capture/deferred-scope.interface';
import type { DeferredItemOptions } from '../../core/items/deferred-item.interface';
import { passthrough } from './passthrough';

/**
 * A handle on the microservice client registered as `clientName` (`ClientsModule.register`):
 * `emit(pattern, data)` defers the event through the current scope to the `ClientProxySink` named
 * `clientName` (after the response, batched, confirmed by the broker where the transport can, with a
 * stable message id) and returns an observable that completes at once; every other member — `send()`,
 * which waits for a reply and cannot be deferred, `connect()`, `close()` — is the real client's.
 */
export function deferredClient<C extends object = object>(clientName: string, scope: () => DeferredScope, real: () => object | undefined): C {
  const own = {
    /** Like `ClientProxy.emit`: the observable emits `undefined` and completes (at once: the event goes out after the response). */
    emit(pattern: unknown, data: unknown, opts?: DeferredItemOptions & { jobId?: string }): Observable<undefined> {
      if (typeof pattern !== 'string') {
        throw new TypeError(
          `The deferred handle of client "${clientName}" takes string patterns; got ${typeof pattern}. ` +
            'Use a string pattern (e.g. "order.placed"), or the real client for object patterns.',
        );
      }
      scope().job(clientName, pattern, data, { ...opts, sink: clientName });
      return of(undefined);
    },
  };
  return passthrough<C>(
    own,
    real,
    () => new Error(`Client "${clientName}" is not registered. Register it with ClientsModule.register([{ name: '${clientName}', … }]).`),
  );
}
