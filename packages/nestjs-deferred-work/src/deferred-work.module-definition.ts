import { ConfigurableModuleBuilder } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { DeferredWorkInterceptor } from './deferred-work.interceptor';
import type { DeferredWorkModuleExtras, DeferredWorkModuleOptions } from './options/module-options.interface';

export const {
  ConfigurableModuleClass: DeferredWorkConfigurableModule,
  MODULE_OPTIONS_TOKEN: DEFERRED_WORK_MODULE_OPTIONS,
  OPTIONS_TYPE: DEFERRED_WORK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DEFERRED_WORK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DeferredWorkModuleOptions>({ moduleName: 'DeferredWork' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDeferredWorkOptions')
  .setExtras<Required<DeferredWorkModuleExtras>>({ isGlobal: true, registerInterceptor: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    providers: extras.registerInterceptor
      ? [...(definition.providers ?? []), { provide: APP_INTERCEPTOR, useExisting: DeferredWorkInterceptor }]
      : definition.providers,
  }))
  .build();
