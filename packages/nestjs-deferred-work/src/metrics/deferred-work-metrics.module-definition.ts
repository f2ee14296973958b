import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DeferredWorkMetricsOptions } from './metrics-options.interface';

export const {
  ConfigurableModuleClass: DeferredWorkMetricsConfigurableModule,
  MODULE_OPTIONS_TOKEN: DEFERRED_WORK_METRICS_OPTIONS,
} = new ConfigurableModuleBuilder<DeferredWorkMetricsOptions>({ moduleName: 'DeferredWorkMetrics' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDeferredWorkMetricsOptions')
  .build();
