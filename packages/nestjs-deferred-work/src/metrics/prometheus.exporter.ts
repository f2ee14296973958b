import type { Counter, Gauge, Registry } from 'prom-client';
import { type HistogramSeries, RegistryHistogram } from './registry-histogram';
import {
  DELIVERY_LAG,
  OBSERVED_METRICS,
  prometheusName,
  type RecordedMetric,
  ROUTE_HANDLER,
  ROUTE_SEND,
  WRITE_BATCH_SIZE,
  WRITE_DURATION,
  WRITE_ERRORS,
} from './self-metrics.catalog';
import { type SelfMetricsExporter, type SelfMetricsFlags, writeOutcome } from './self-metrics.exporter';
import type { SnapshotSource } from './self-metrics.snapshot';
import { loadPeer } from './load-peer';

type PromClient = typeof import('prom-client');

/**
 * The library's own metrics in a prom-client registry: counters and gauges with `collect()` callbacks
 * (read from `stats()` at scrape time), histograms observed on the write path through series kept per
 * sink (and outcome / kind): a write looks up one map entry and allocates nothing.
 */
export async function prometheusExporter(
  options: { registry?: Registry; prefix: string },
  source: SnapshotSource,
  flags: SelfMetricsFlags,
): Promise<SelfMetricsExporter> {
  const prom = await loadPeer<PromClient>('prom-client', 'prometheus', ['Counter', 'Gauge', 'Histogram', 'register']);
  const registry = options.registry ?? prom.register;
  const names: string[] = [];
  const add = <T>(name: string, make: () => T): T => {
    if (registry.getSingleMetric(name)) {
      for (const added of names) registry.removeSingleMetric(added);
      throw new Error(
        `DeferredWorkMetricsModule: the registry already has a metric named "${name}". ` +
          'Give the library\'s metrics another "prometheus.prefix", or a registry of their own, or import DeferredWorkMetricsModule once.',
      );
    }
    names.push(name);
    return make();
  };

  for (const metric of OBSERVED_METRICS) {
    const name = prometheusName(options.prefix, metric);
    const config = { name, help: metric.help, labelNames: [...metric.labels], registers: [registry] };
    if (metric.type === 'counter') {
      add(name, () => new prom.Counter({
        ...config,
        collect(this: Counter<string>) {
          this.reset();
          for (const [labels, value] of metric.read(source.read())) this.inc(labels, value);
        },
      }));
    } else {
      add(name, () => new prom.Gauge({
        ...config,
        collect(this: Gauge<string>) {
          this.reset();
          for (const [labels, value] of metric.read(source.read())) this.set(labels, value);
        },
      }));
    }
  }
  const histogram = (metric: RecordedMetric): RegistryHistogram => {
    const name = prometheusName(options.prefix, metric);
    return add(name, () => new RegistryHistogram(name, metric.help, metric.buckets).register(registry));
  };
  const duration = histogram(WRITE_DURATION);
  const size = histogram(WRITE_BATCH_SIZE);
  const errorsName = prometheusName(options.prefix, WRITE_ERRORS);
  const errors = add(errorsName, () => new prom.Counter({ name: errorsName, help: WRITE_ERRORS.help, labelNames: [...WRITE_ERRORS.labels], registers: [registry] }));
  const lag = flags.deliveryLag ? histogram(DELIVERY_LAG) : undefined;
  const handler = flags.routeTimings ? histogram(ROUTE_HANDLER) : undefined;
  const send = flags.routeTimings ? histogram(ROUTE_SEND) : undefined;

  // Series made once per sink (and outcome, kind, route): the write path only finds them.
  const sinks = new Map<string, SinkSeries>();
  const seriesOf = (sink: string): SinkSeries => {
    let series = sinks.get(sink);
    if (!series) sinks.set(sink, (series = { size: size.child({ sink }), lag: new Map() }));
    return series;
  };
  const routes = new Map<string, Map<string, { handler: HistogramSeries; send: HistogramSeries }>>();

  return {
    wrote(sink, ms, items, failed, code) {
      const series = seriesOf(sink);
      if (failed === 0) (series.success ??= duration.child({ sink, outcome: writeOutcome(0) })).observe(ms / 1000);
      else (series.failure ??= duration.child({ sink, outcome: writeOutcome(failed) })).observe(ms / 1000);
      series.size.observe(items);
      if (failed > 0) errors.inc({ sink, error_type: code ?? 'unknown' });
    },
    delivered(sink, kind, ms) {
      if (!lag) return;
      const byKind = seriesOf(sink).lag;
      let series = byKind.get(kind);
      if (!series) byKind.set(kind, (series = lag.child({ sink, kind })));
      series.observe(ms / 1000);
    },
    routeTiming(method, route, handlerMs, sendMs) {
      if (!handler || !send) return;
      let byRoute = routes.get(method);
      if (!byRoute) routes.set(method, (byRoute = new Map()));
      let series = byRoute.get(route);
      if (!series) byRoute.set(route, (series = { handler: handler.child({ method, route }), send: send.child({ method, route }) }));
      series.handler.observe(handlerMs / 1000);
      series.send.observe(sendMs / 1000);
    },
    close() {
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}

/** One sink's histogram series (the duration's made at its first success / failure, the lag's per kind). */
interface SinkSeries {
  success?: HistogramSeries;
  failure?: HistogramSeries;
  size: HistogramSeries;
  lag: Map<string, HistogramSeries>;
}
