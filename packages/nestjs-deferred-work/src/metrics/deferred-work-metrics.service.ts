import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { RequestTracker } from '../capture/request-tracker';
import { DeferredWork } from '../nest/deferred-work.service';
import { Dispatcher } from '../pipeline/dispatcher';
import { DEFERRED_WORK_METRICS_OPTIONS } from './deferred-work-metrics.module-definition';
import type { DeferredWorkMetricsOptions } from './metrics-options.interface';
import { openTelemetryExporter } from './opentelemetry.exporter';
import { prometheusExporter } from './prometheus.exporter';
import { resolveMetricsOptions } from './resolve-metrics-options';
import type { SelfMetricsExporter } from './self-metrics.exporter';
import { SnapshotSource } from './self-metrics.snapshot';

/**
 * Registers the library's own metrics at bootstrap (in the app's prom-client registry and/or its
 * OpenTelemetry meter) and takes them out at shutdown. Provided by `DeferredWorkMetricsModule`.
 */
@Injectable()
export class DeferredWorkMetrics implements OnModuleInit, OnApplicationShutdown {
  private readonly stops: Array<() => void> = [];

  constructor(
    @Inject(DEFERRED_WORK_METRICS_OPTIONS) private readonly options: DeferredWorkMetricsOptions,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
  ) {}

  async onModuleInit(): Promise<void> {
    const options = resolveMetricsOptions(this.options);
    const dispatcher = this.find(Dispatcher);
    const work = this.find(DeferredWork);
    const source = new SnapshotSource(dispatcher, () => work.stats());
    const flags = { deliveryLag: options.deliveryLag, routeTimings: options.routeTimings };
    const exporters: SelfMetricsExporter[] = [];
    try {
      if (options.prometheus) exporters.push(await prometheusExporter(options.prometheus, source, flags));
      if (options.opentelemetry) exporters.push(await openTelemetryExporter(options.opentelemetry, source, flags));
    } catch (error) {
      for (const exporter of exporters) exporter.close();
      throw error;
    }
    for (const exporter of exporters) {
      this.stops.push(() => exporter.close());
      this.stops.push(dispatcher.observeWrites({ wrote: exporter.wrote, delivered: options.deliveryLag ? exporter.delivered : undefined }));
      if (options.routeTimings) {
        this.stops.push(
          this.find(RequestTracker).observeTimings((key, handlerMs, sendMs) => {
            const space = key.indexOf(' ');
            exporter.routeTiming(key.slice(0, space), key.slice(space + 1), handlerMs, sendMs);
          }),
        );
      }
    }
  }

  onApplicationShutdown(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  private find<T>(type: abstract new (...args: never[]) => T): T {
    try {
      return this.moduleRef.get(type as never, { strict: false }) as T;
    } catch {
      throw new Error(
        'DeferredWorkMetricsModule: DeferredWorkModule was not found in the app. Import DeferredWorkModule.forRoot() (or forRootAsync()) in the same application.',
      );
    }
  }
}
