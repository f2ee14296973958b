import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { DeferredScope } from '../../capture/deferred-scope.interface';
import { Dispatcher } from '../../pipeline/dispatcher';
import { DeferredWork } from '../deferred-work.service';
import { deferredClient } from './deferred-client.handle';
import { type DeferredMetricHandle, deferredMetric, type MetricDeclarationLookup } from './deferred-metric.handle';
import { deferredQueue } from './deferred-queue.handle';

/** `getQueueToken(name)` of `@nestjs/bull` and `@nestjs/bullmq` (both `BullQueue_<name>`). */
const queueToken = (name: string) => (name ? `BullQueue_${name}` : 'BullQueue_default');

/**
 * @internal
 * Builds the deferred handles: on the current request's scope (injected handles), or on one scope
 * (a handler's parameter). Finds the real queue or client in the app on first use, and the metrics'
 * declarations in the metrics sinks.
 */
@Injectable()
export class DeferredHandles implements OnApplicationBootstrap {
  constructor(
    @Inject(DeferredWork) private readonly work: DeferredWork,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
  ) {}

  /** The current request's scope (with an async context), else the direct one. */
  readonly current = (): DeferredScope => this.work.current();

  queue<Q extends object>(name: string, scope: () => DeferredScope = this.current): Q {
    return deferredQueue<Q>(name, scope, this.finder(queueToken(name)));
  }

  client<C extends object>(name: string, scope: () => DeferredScope = this.current): C {
    return deferredClient<C>(name, scope, this.finder(name));
  }

  metric(name: string, scope: () => DeferredScope = this.current): DeferredMetricHandle {
    return deferredMetric(name, scope, this.declarations);
  }

  /** The metric's declaration in the first metrics sink that has one. */
  readonly declarations: MetricDeclarationLookup = (name) => {
    for (const sink of this.dispatcher.options.sinks.values()) {
      const found = (sink as { declarationOf?: MetricDeclarationLookup }).declarationOf?.(name);
      if (found) return found;
    }
    return undefined;
  };

  /**
   * The provider registered under `token`, looked up on first use and kept, one lookup per token for
   * the whole app (a handle is built per request when it is a parameter). A token not registered is
   * looked up again until the app has bootstrapped (a handle can be built before the provider exists),
   * then known to be missing: a failed lookup throws inside Nest, which is slow.
   */
  private finder(token: string): () => object | undefined {
    let find = this.finders.get(token);
    if (find) return find;
    let found: object | undefined;
    let missing = false;
    find = () => {
      if (found || missing) return found;
      try {
        found = this.moduleRef.get(token, { strict: false }) as object | undefined;
      } catch {
        found = undefined;
      }
      if (!found && this.bootstrapped) missing = true;
      return found;
    };
    this.finders.set(token, find);
    return find;
  }

  private readonly finders = new Map<string, () => object | undefined>();
  private bootstrapped = false;

  onApplicationBootstrap(): void {
    this.bootstrapped = true;
  }
}
