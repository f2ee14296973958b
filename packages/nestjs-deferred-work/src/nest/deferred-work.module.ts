import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DEFERRED_WORK_MODULE_OPTIONS, DeferredWorkConfigurableModule } from './deferred-work.module-definition';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';
import { DeferredWork } from './deferred-work.service';
import { Dispatcher } from './dispatch/dispatcher';
import { DeferredWorkHealthIndicator } from './health/deferred-work.health-indicator';
import type { DeferredWorkModuleOptions } from './options/module-options.interface';
import { resolveOptions } from './options/resolve-options';
import { DeferredAsyncContext } from './request-scope/async-context';
import { DirectScope } from './request-scope/direct-scope';
import { ScopeOpener } from './request-scope/scope-opener';

/**
 * `DeferredWorkModule.forRoot(options)` / `forRootAsync({ imports, inject, useFactory | useClass |
 * useExisting })`. Global by default. Registers `DeferredWorkInterceptor` for every route only when
 * `asyncContext` or `timing` needs it (`registerInterceptor`).
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: Dispatcher,
      inject: [DEFERRED_WORK_MODULE_OPTIONS],
      useFactory: (options: DeferredWorkModuleOptions) => new Dispatcher(resolveOptions(options)),
    },
    {
      provide: DirectScope,
      inject: [Dispatcher],
      useFactory: (dispatcher: Dispatcher) => new DirectScope({ when: dispatcher.options.when, sinks: {} }, dispatcher),
    },
    {
      provide: DeferredAsyncContext,
      inject: [Dispatcher],
      useFactory: (dispatcher: Dispatcher) => (dispatcher.options.asyncContext ? new DeferredAsyncContext() : null),
    },
    ScopeOpener,
    DeferredWorkInterceptor,
    DeferredWork,
    DeferredWorkHealthIndicator,
  ],
  exports: [
    DeferredWork,
    DeferredWorkInterceptor,
    DeferredWorkHealthIndicator,
    ScopeOpener,
    Dispatcher,
    DirectScope,
    DeferredAsyncContext,
  ],
})
export class DeferredWorkModule extends DeferredWorkConfigurableModule {}
