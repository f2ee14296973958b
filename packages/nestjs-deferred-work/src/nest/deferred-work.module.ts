import { type DynamicModule, Module } from '@nestjs/common';
import { DeferredHandles } from './handles/deferred-handles';
import { DeferredMetrics } from './handles/deferred-metrics.service';
import { type DeferredHandleNames, handleProviders, tokensOf } from './handles/handle.providers';
import { DiscoveryModule } from '@nestjs/core';
import { RequestTracker } from '../capture/request-tracker';
import type { ResolvedDeferredWorkOptions } from '../pipeline/resolved-options.interface';
import {
  DEFERRED_WORK_MODULE_OPTIONS,
  DeferredWorkConfigurableModule,
  RESOLVED_DEFERRED_WORK_OPTIONS,
} from './deferred-work.module-definition';
import { DeferredWorkLifecycle } from './deferred-work.lifecycle';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';
import { DeferredWork } from './deferred-work.service';
import { Dispatcher } from '../pipeline/dispatcher';
import { DeferredWorkHealthIndicator } from './health/deferred-work.health-indicator';
import type { DeferredWorkModuleOptions } from './options/module-options.interface';
import { resolveOptions } from './options/resolve-options';
import { DeferredAsyncContext } from '../capture/async-context';
import { DEFERRED_INTAKE } from '../core/intake.interface';
import { DispatcherIntake } from './deferred-intake';
import { Correlator } from '../capture/correlation';
import { DirectScope } from '../capture/direct-scope';
import { ScopeOpener } from '../capture/scope-opener';
import { HandlerScopes } from '../capture/handler-scopes';

/**
 * `DeferredWorkModule.forRoot(options)` / `forRootAsync({ imports, inject, useFactory | useClass |
 * useExisting })`. Global by default. Registers `DeferredWorkInterceptor` for every route only when
 * `asyncContext` or `timing` needs it (`registerInterceptor`).
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RESOLVED_DEFERRED_WORK_OPTIONS,
      inject: [DEFERRED_WORK_MODULE_OPTIONS],
      useFactory: (options: DeferredWorkModuleOptions) => resolveOptions(options),
    },
    {
      provide: Dispatcher,
      inject: [RESOLVED_DEFERRED_WORK_OPTIONS],
      useFactory: (options: ResolvedDeferredWorkOptions) => new Dispatcher(options),
    },
    RequestTracker,
    {
      provide: Correlator,
      inject: [Dispatcher],
      useFactory: (dispatcher: Dispatcher) => new Correlator(dispatcher.options.correlation),
    },
    {
      provide: DirectScope,
      inject: [Dispatcher, Correlator],
      useFactory: (dispatcher: Dispatcher, correlator: Correlator) => new DirectScope({ when: dispatcher.options.when, sinks: {} }, dispatcher, correlator),
    },
    {
      provide: DeferredAsyncContext,
      inject: [Dispatcher],
      useFactory: (dispatcher: Dispatcher) => (dispatcher.options.asyncContext ? new DeferredAsyncContext() : null),
    },
    ScopeOpener,
    HandlerScopes,
    DeferredWorkInterceptor,
    DeferredWork,
    DeferredWorkLifecycle,
    DeferredWorkHealthIndicator,
    DeferredHandles,
    DeferredMetrics,
    DispatcherIntake,
    { provide: DEFERRED_INTAKE, useExisting: DispatcherIntake },
  ],
  exports: [
    DeferredWork,
    DeferredHandles,
    DeferredMetrics,
    DeferredWorkInterceptor,
    DeferredWorkHealthIndicator,
    RESOLVED_DEFERRED_WORK_OPTIONS,
    // What DeferredWorkInterceptor needs where @AfterResponse() binds it, in the user's modules.
    ScopeOpener,
    HandlerScopes,
    DeferredAsyncContext,
    Correlator,
    // What a source other than a request (the SQL outbox's relay) hands its items to.
    DEFERRED_INTAKE,
  ],
})
export class DeferredWorkModule extends DeferredWorkConfigurableModule {
  /**
   * The deferred handles a feature module injects, for the names the handle decorators cannot tell
   * `forRoot()` about (a module loaded after it, or a name computed at run time):
   * `DeferredWorkModule.forFeature({ queues: ['mail'], clients: ['EVENTS'], metrics: ['orders_total'] })`.
   * `forRoot()` already provides every handle asked for with `@InjectDeferredQueue()`,
   * `@InjectDeferredClient()` and `@InjectDeferredMetric()` in code loaded before it.
   */
  static forFeature(names: DeferredHandleNames): DynamicModule {
    const providers = handleProviders(names);
    return { module: DeferredWorkFeatureModule, providers, exports: tokensOf(providers) };
  }
}

/** The module `DeferredWorkModule.forFeature()` returns. */
@Module({})
export class DeferredWorkFeatureModule {}
