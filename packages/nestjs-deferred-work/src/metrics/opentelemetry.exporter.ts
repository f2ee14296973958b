import type { Attributes, BatchObservableCallback, Histogram, Meter, Observable, ObservableCounter, ObservableGauge } from '@opentelemetry/api';
import { DELIVERY_LAG, OBSERVED_METRICS, type ObservedMetric, type RecordedMetric, ROUTE_HANDLER, ROUTE_SEND, WRITE_BATCH_SIZE, WRITE_DURATION, WRITE_ERRORS } from './self-metrics.catalog';
import { type SelfMetricsExporter, type SelfMetricsFlags, writeOutcome } from './self-metrics.exporter';
import type { SnapshotSource } from './self-metrics.snapshot';
import { loadPeer } from './load-peer';

type OtelApi = typeof import('@opentelemetry/api');

/**
 * The library's own metrics as OpenTelemetry instruments: observable counters and gauges read from
 * `stats()` in one batch callback per collection, histograms recorded on the write path.
 */
export async function openTelemetryExporter(
  options: { meter?: Meter; prefix: string },
  source: SnapshotSource,
  flags: SelfMetricsFlags,
): Promise<SelfMetricsExporter> {
  const meter = options.meter ?? (await loadPeer<OtelApi>('@opentelemetry/api', 'opentelemetry', ['metrics'])).metrics.getMeter('nestjs-deferred-work');
  const observed: Array<[ObservedMetric, ObservableCounter | ObservableGauge]> = OBSERVED_METRICS.map((metric) => {
    const name = options.prefix + metric.name;
    const opts = { description: metric.help, unit: metric.unit };
    return [metric, metric.type === 'counter' ? meter.createObservableCounter(name, opts) : meter.createObservableGauge(name, opts)];
  });
  const instruments: Observable[] = observed.map(([, instrument]) => instrument);
  const callback: BatchObservableCallback = (result) => {
    const snapshot = source.read();
    for (const [metric, instrument] of observed) for (const [labels, value] of metric.read(snapshot)) result.observe(instrument, value, labels as Attributes);
  };
  meter.addBatchObservableCallback(callback, instruments);

  const histogram = (metric: RecordedMetric): Histogram =>
    meter.createHistogram(options.prefix + metric.name, { description: metric.help, unit: metric.unit, advice: { explicitBucketBoundaries: [...metric.buckets] } });
  const duration = histogram(WRITE_DURATION);
  const size = histogram(WRITE_BATCH_SIZE);
  const errors = meter.createCounter(options.prefix + WRITE_ERRORS.name, { description: WRITE_ERRORS.help, unit: WRITE_ERRORS.unit });
  const lag = flags.deliveryLag ? histogram(DELIVERY_LAG) : undefined;
  const handler = flags.routeTimings ? histogram(ROUTE_HANDLER) : undefined;
  const send = flags.routeTimings ? histogram(ROUTE_SEND) : undefined;
  let open = true;
  // Attribute objects made once per sink (and outcome, kind): a write allocates none.
  const sinks = new Map<string, { success: Attributes; failure: Attributes; sink: Attributes; kinds: Map<string, Attributes> }>();
  const attributesOf = (sink: string) => {
    let attributes = sinks.get(sink);
    if (!attributes) {
      attributes = { success: { sink, outcome: writeOutcome(0) }, failure: { sink, outcome: writeOutcome(1) }, sink: { sink }, kinds: new Map() };
      sinks.set(sink, attributes);
    }
    return attributes;
  };

  return {
    wrote(sink, ms, items, failed, code) {
      if (!open) return;
      const attributes = attributesOf(sink);
      duration.record(ms / 1000, failed === 0 ? attributes.success : attributes.failure);
      size.record(items, attributes.sink);
      if (failed > 0) errors.add(1, { sink, error_type: code ?? 'unknown' });
    },
    delivered(sink, kind, ms) {
      if (!open || !lag) return;
      const kinds = attributesOf(sink).kinds;
      let attributes = kinds.get(kind);
      if (!attributes) kinds.set(kind, (attributes = { sink, kind }));
      lag.record(ms / 1000, attributes);
    },
    routeTiming(method, route, handlerMs, sendMs) {
      if (!open) return;
      handler?.record(handlerMs / 1000, { method, route });
      send?.record(sendMs / 1000, { method, route });
    },
    close() {
      open = false;
      meter.removeBatchObservableCallback(callback, instruments);
    },
  };
}
