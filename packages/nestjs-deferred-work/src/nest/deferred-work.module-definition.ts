import { ConfigurableModuleBuilder } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';
import { anyHandleInUse } from './handles/handle-tokens';
import { handleProviders, tokensOf } from './handles/handle.providers';
import type { DeferredWorkModuleExtras, DeferredWorkModuleOptions } from './options/module-options.interface';

/**
 * @internal
 * How `DeferredWorkInterceptor` stands globally (checked at bootstrap): registered as an
 * `APP_INTERCEPTOR`, left out by `auto`, or left out on purpose (`registerInterceptor: false`).
 */
export const GLOBAL_INTERCEPTOR_REGISTERED = Symbol('nestjs-deferred-work.global-interceptor');
export type GlobalInterceptorState = 'registered' | 'auto-off' | 'off';

/**
 * Injection token of the module's options with every default applied and validated
 * (`ResolvedDeferredWorkOptions`): inject it to read what the library actually uses.
 */
export const RESOLVED_DEFERRED_WORK_OPTIONS = Symbol('nestjs-deferred-work.resolved-options');

export const {
  ConfigurableModuleClass: DeferredWorkConfigurableModule,
  MODULE_OPTIONS_TOKEN: DEFERRED_WORK_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<DeferredWorkModuleOptions>({ moduleName: 'DeferredWork' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDeferredWorkOptions')
  .setExtras<DeferredWorkModuleExtras>({ isGlobal: true, registerInterceptor: undefined }, (definition, extras) => {
    // forRoot() passes every option here; forRootAsync() only the extras, so `auto` cannot see
    // asyncContext/timing there — the bootstrap check then asks for registerInterceptor: true.
    const seen = extras as DeferredWorkModuleExtras & Pick<DeferredWorkModuleOptions, 'asyncContext' | 'timing'>;
    // Injected handles find their request through the async context, which runs in the interceptor.
    const handles = seen.asyncContext !== false && anyHandleInUse();
    const register = extras.registerInterceptor ?? (seen.asyncContext === true || seen.timing === true || handles);
    // A handle for every name the handle decorators asked for in the code loaded so far.
    const handleProvidersNow = handleProviders({}, true);
    return {
      ...definition,
      global: extras.isGlobal ?? true,
      providers: [
        ...(definition.providers ?? []),
        {
          provide: GLOBAL_INTERCEPTOR_REGISTERED,
          useValue: (register ? 'registered' : extras.registerInterceptor === false ? 'off' : 'auto-off') satisfies GlobalInterceptorState,
        },
        ...(register ? [{ provide: APP_INTERCEPTOR, useExisting: DeferredWorkInterceptor }] : []),
        ...handleProvidersNow,
      ],
      exports: [...(definition.exports ?? []), ...tokensOf(handleProvidersNow)],
    };
  })
  .build();
