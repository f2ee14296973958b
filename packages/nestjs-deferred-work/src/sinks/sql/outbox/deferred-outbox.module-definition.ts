import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DeferredOutboxOptions } from './outbox.options';

export const {
  ConfigurableModuleClass: DeferredOutboxConfigurableModule,
  MODULE_OPTIONS_TOKEN: DEFERRED_OUTBOX_OPTIONS,
} = new ConfigurableModuleBuilder<DeferredOutboxOptions>({ moduleName: 'DeferredOutbox' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDeferredOutboxOptions')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
