import { Module } from '@nestjs/common';
import { DeferredWorkMetricsConfigurableModule } from './deferred-work-metrics.module-definition';
import { DeferredWorkMetrics } from './deferred-work-metrics.service';

/**
 * The library's own metrics where the app's metrics go:
 * `DeferredWorkMetricsModule.forRoot({ prometheus: true })` registers them in prom-client's default
 * registry, `{ opentelemetry: true }` creates them on the global meter provider's meter (both can be
 * on; `forRootAsync()` takes a factory). Counts and gauges are read from `DeferredWork.stats()` when
 * the metrics are collected; write durations and batch sizes are recorded on the write path. Nothing
 * is added to the request path. Needs `DeferredWorkModule` in the same app. See docs/operations.md.
 */
@Module({ providers: [DeferredWorkMetrics], exports: [DeferredWorkMetrics] })
export class DeferredWorkMetricsModule extends DeferredWorkMetricsConfigurableModule {}
