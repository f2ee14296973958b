import { Inject, Injectable } from '@nestjs/common';
import { DeferredHandles } from './deferred-handles';
import { type DeferredAdder, deferredAdder, type DeferredMetricHandle, type DeferredRecorder, deferredRecorder } from './deferred-metric.handle';

/**
 * Deferred metrics, injectable, in the shapes apps already use: OpenTelemetry instruments (as
 * nestjs-otel's `MetricService` hands them out: `getCounter(name).add(1, attributes)`) and
 * prom-client metrics (`metric(name).inc({ channel: 'web' })`). Each point goes to the metrics sinks
 * the routing names — after the response on a decorated route, at once elsewhere. A name is the one
 * declared in the sinks (`metrics: [{ name, type, … }]`).
 */
@Injectable()
export class DeferredMetrics {
  constructor(@Inject(DeferredHandles) private readonly handles: DeferredHandles) {}

  /** An OpenTelemetry-style counter: `add(value, attributes?)`. */
  getCounter(name: string): DeferredAdder {
    return deferredAdder(name, this.handles.current);
  }

  /** An OpenTelemetry-style up-down counter: `add(value, attributes?)`, the value may be negative. */
  getUpDownCounter(name: string): DeferredAdder {
    return deferredAdder(name, this.handles.current);
  }

  /** An OpenTelemetry-style histogram: `record(value, attributes?)`. */
  getHistogram(name: string): DeferredRecorder {
    return deferredRecorder(name, this.handles.current);
  }

  /** An OpenTelemetry-style gauge: `record(value, attributes?)`. */
  getGauge(name: string): DeferredRecorder {
    return deferredRecorder(name, this.handles.current);
  }

  /** A prom-client-style metric (`inc`, `dec`, `set`, `observe`, `labels`, `startTimer`). */
  metric(name: string): DeferredMetricHandle {
    return this.handles.metric(name);
  }
}
