import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { OpenTelemetryMetricsSink } from 'nestjs-deferred-work/opentelemetry';
import { describeSinkConformance } from '../support/sink-conformance';

/**
 * OpenTelemetryMetricsSink on a real SDK `MeterProvider` (a fresh one per test, its meter passed to
 * the sink) exporting to the SDK's in-memory exporter with delta temporality: each item adds 1 to
 * the counter `conf.marks` under its own `mark` attribute, and the marks are read back from the
 * exported data points — each point's value summed over the exports, so a mark written twice shows
 * twice.
 *
 * Left out: `poison`. A bad metric item (undeclared name or attribute, a value its type refuses, an
 * attribute set beyond `maxLabelSets`) is refused when it is deferred (`validate`, counted in
 * `stats().rejected`), so it never reaches a write; and the SDK's `Counter.add` does not throw for an
 * item that passed those checks.
 * (The write checks the item again, so a handler that changes its tags object after deferring the
 * item does get it dead-lettered there; that is misuse, not a refusal by the destination, so it is
 * not used as the poison entry.)
 * Also left out: `outage` and `blackhole`: the meter is in-process, with no server
 * to stop and no link to cut.
 */
const INSTRUMENT = 'conf.marks';
let provider: MeterProvider | undefined;
let reader: PeriodicExportingMetricReader | undefined;
let exporter: InMemoryMetricExporter | undefined;

describeSinkConformance({
  name: 'OpenTelemetryMetricsSink',
  open: () => {
    exporter = new InMemoryMetricExporter(AggregationTemporality.DELTA);
    // Exports only when the test reads (forceFlush): the interval is far longer than any test.
    reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    provider = new MeterProvider({ readers: [reader] });
    const sink = new OpenTelemetryMetricsSink({
      name: 'conf-opentelemetry',
      meter: provider.getMeter('conformance'),
      metrics: [{ name: INSTRUMENT, type: 'counter', help: 'Items written by the conformance suite', labelNames: ['mark'] }],
      maxLabelSets: 10_000,
    });
    const shutdown = provider;
    return { sink, close: () => shutdown.shutdown() };
  },
  defer: (work, mark) => work.metric(INSTRUMENT, 1, { mark }),
  received: async () => {
    await reader!.forceFlush();
    const counts = new Map<string, number>();
    for (const resourceMetrics of exporter!.getMetrics()) {
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          if (metric.descriptor.name !== INSTRUMENT) continue;
          if (metric.dataPointType !== DataPointType.SUM) throw new Error(`${INSTRUMENT} is exported as data point type ${metric.dataPointType}, not a sum`);
          for (const point of metric.dataPoints) {
            const mark = String(point.attributes.mark);
            counts.set(mark, (counts.get(mark) ?? 0) + point.value);
          }
        }
      }
    }
    return [...counts].flatMap(([mark, value]) => Array.from({ length: value }, () => mark));
  },
});
