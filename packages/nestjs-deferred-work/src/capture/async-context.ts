import { AsyncLocalStorage } from 'node:async_hooks';
import type { DeferredScope } from './deferred-scope.interface';

/** Where the current request's scope is kept while its handler runs. */
export interface ScopeStore {
  /** `own` (the library's AsyncLocalStorage), `opentelemetry` (the app's OpenTelemetry context), `cls` (nestjs-cls). */
  readonly kind: 'own' | 'opentelemetry' | 'cls';
  run<T>(scope: DeferredScope, fn: () => T): T;
  current(): DeferredScope | undefined;
}

/** The library's own store: one AsyncLocalStorage. */
class OwnStore implements ScopeStore {
  readonly kind = 'own';
  private readonly storage = new AsyncLocalStorage<DeferredScope>();

  run<T>(scope: DeferredScope, fn: () => T): T {
    return this.storage.run(scope, fn);
  }

  current(): DeferredScope | undefined {
    return this.storage.getStore();
  }
}

/** The part of `@opentelemetry/api` the OpenTelemetry store uses. */
export interface OtelContextApi {
  createContextKey(description: string): symbol;
  context: {
    active(): { getValue(key: symbol): unknown; setValue(key: symbol, value: unknown): unknown };
    with<R>(context: unknown, fn: () => R): R;
  };
}

/** The scope as a value of the app's OpenTelemetry context (its context manager's store, already entered per request). */
class OtelStore implements ScopeStore {
  readonly kind = 'opentelemetry';
  private readonly key: symbol;

  constructor(private readonly api: OtelContextApi) {
    this.key = api.createContextKey('nestjs-deferred-work.scope');
  }

  run<T>(scope: DeferredScope, fn: () => T): T {
    return this.api.context.with(this.api.context.active().setValue(this.key, scope), fn);
  }

  current(): DeferredScope | undefined {
    return this.api.context.active().getValue(this.key) as DeferredScope | undefined;
  }
}

/** The part of nestjs-cls's `ClsService` the CLS store uses. */
export interface ClsServiceLike {
  isActive(): boolean;
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

const CLS_KEY = 'nestjs-deferred-work.scope';

/** The scope as a value of the request's nestjs-cls context (entered by ClsModule); `fallback` where none is active. */
class ClsStore implements ScopeStore {
  readonly kind = 'cls';

  constructor(
    private readonly cls: ClsServiceLike,
    private readonly fallback: ScopeStore,
  ) {}

  run<T>(scope: DeferredScope, fn: () => T): T {
    if (!this.cls.isActive()) return this.fallback.run(scope, fn);
    this.cls.set(CLS_KEY, scope);
    return fn();
  }

  current(): DeferredScope | undefined {
    return this.cls.isActive() ? ((this.cls.get(CLS_KEY) as DeferredScope | undefined) ?? this.fallback.current()) : this.fallback.current();
  }
}

/**
 * @internal
 * The store that lets the injectable `DeferredWork` and the injected handles find the current
 * request's scope anywhere in its call chain (`asyncContext`). It uses the app's own async context
 * when there is one — nestjs-cls's, else the OpenTelemetry context manager's — so that no second
 * store is entered, and an AsyncLocalStorage of its own otherwise. On Node 20, the first
 * AsyncLocalStorage `run()` in a process turns on promise hooks for all of it (10–25% more CPU per
 * request was measured); an app that already runs nestjs-cls or OpenTelemetry pays that already.
 */
export class DeferredAsyncContext {
  private store: ScopeStore = new OwnStore();

  /** Which store is in use (chosen at bootstrap). */
  get storeKind(): ScopeStore['kind'] {
    return this.store.kind;
  }

  /** At bootstrap: keep scopes in the app's nestjs-cls context, else its OpenTelemetry context, when given. */
  use(options: { cls?: ClsServiceLike; otel?: OtelContextApi }): void {
    const otel = options.otel ? new OtelStore(options.otel) : undefined;
    if (options.cls) this.store = new ClsStore(options.cls, otel ?? this.store);
    else if (otel) this.store = otel;
  }

  run<T>(scope: DeferredScope, fn: () => T): T {
    return this.store.run(scope, fn);
  }

  current(): DeferredScope | undefined {
    return this.store.current();
  }
}
