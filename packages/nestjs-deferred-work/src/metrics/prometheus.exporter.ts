import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
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
 * (read from `stats()` at scrape time), histograms observed on the write path.
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
  const histogram = (metric: RecordedMetric): Histogram<string> => {
    const name = prometheusName(options.prefix, metric);
    return add(name, () => new prom.Histogram({ name, help: metric.help, labelNames: [...metric.labels], buckets: [...metric.buckets], registers: [registry] }));
  };
  const duration = histogram(WRITE_DURATION);
  const size = histogram(WRITE_BATCH_SIZE);
  const errorsName = prometheusName(options.prefix, WRITE_ERRORS);
  const errors = add(errorsName, () => new prom.Counter({ name: errorsName, help: WRITE_ERRORS.help, labelNames: [...WRITE_ERRORS.labels], registers: [registry] }));
  const lag = flags.deliveryLag ? histogram(DELIVERY_LAG) : undefined;
  const handler = flags.routeTimings ? histogram(ROUTE_HANDLER) : undefined;
  const send = flags.routeTimings ? histogram(ROUTE_SEND) : undefined;

  // The delivery lag is observed once per delivered item: its children are kept, not looked up by labels each time.
  const lagChildren = new Map<string, ReturnType<Histogram<string>['labels']>>();
  const lagOf = (sink: string, kind: string) => {
    const key = `${sink}\0${kind}`;
    let child = lagChildren.get(key);
    if (!child && lag) lagChildren.set(key, (child = lag.labels({ sink, kind })));
    return child;
  };

  return {
    wrote(sink, ms, items, failed, code) {
      duration.observe({ sink, outcome: writeOutcome(failed) }, ms / 1000);
      size.observe({ sink }, items);
      if (failed > 0) errors.inc({ sink, error_type: code ?? 'unknown' });
    },
    delivered(sink, kind, ms) {
      lagOf(sink, kind)?.observe(ms / 1000);
    },
    routeTiming(method, route, handlerMs, sendMs) {
      handler?.observe({ method, route }, handlerMs / 1000);
      send?.observe({ method, route }, sendMs / 1000);
    },
    close() {
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}
