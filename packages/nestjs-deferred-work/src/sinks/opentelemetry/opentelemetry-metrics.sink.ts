import { Logger } from '@nestjs/common';
import { type Counter, createNoopMeter, type Gauge, type Histogram, type Meter, metrics, type MetricOptions, type UpDownCounter } from '@opentelemetry/api';
import type { MetricItem, SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { type CatalogEntry, checkMaxLabelSets, MetricCatalog, type MetricInstrumentType } from '../kit/metric-catalog';
import { checkOptionsObject, checkSinkName, checkString } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import {
  OPENTELEMETRY_SINK_DEFAULTS,
  type OpenTelemetryMetricDeclaration,
  type OpenTelemetryMetricsSinkOptions,
} from './opentelemetry-sink.options';
import { eachItem } from '../kit/each-item';

type Instrument = Counter | Histogram | Gauge | UpDownCounter;
type Entry = CatalogEntry<OpenTelemetryMetricDeclaration, Instrument>;

/** OpenTelemetry's instrument name syntax (API spec): a letter, then up to 254 of `A-Za-z0-9_.-/`. */
export const OTEL_INSTRUMENT_NAME = /^[A-Za-z][A-Za-z0-9_./-]{0,254}$/;

/**
 * Records `metric` items through an OpenTelemetry `Meter`: counters, histograms, gauges and
 * up-down counters declared up front. Names are kept as written (OpenTelemetry uses dots), after an
 * optional `prefix`. Every item is checked when it is deferred (`validate`): an undeclared name, an
 * undeclared attribute, a value its type does not allow, or an attribute set beyond the instrument's
 * `maxLabelSets` is rejected with the fix and counted in `stats().rejected`.
 *
 * The meter is `metrics.getMeter(meterName)` unless one is given, taken at the first write; while
 * no `MeterProvider` is registered it is OpenTelemetry's no-op meter (values are not recorded): the
 * sink logs that once and looks again at every write, so an SDK started late is still used.
 */
export class OpenTelemetryMetricsSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[] = ['metric'];
  private readonly catalog: MetricCatalog<OpenTelemetryMetricDeclaration, Instrument>;
  private readonly meterName: string;
  private readonly givenMeter: Meter | undefined;
  private meter: Meter | undefined;
  private readonly logger = new Logger('OpenTelemetryMetricsSink');
  private warnedNoop = false;

  constructor(options: OpenTelemetryMetricsSinkOptions) {
    checkOptionsObject('OpenTelemetryMetricsSink', options, '{ metrics: [{ name, type, help?, unit?, labelNames? }], meter?, meterName?, prefix?, maxLabelSets? }');
    this.name = checkSinkName('OpenTelemetryMetricsSink', options.name, OPENTELEMETRY_SINK_DEFAULTS.name);
    const prefix = `OpenTelemetryMetricsSink "${this.name}"`;
    const namePrefix = checkString(prefix, 'prefix', options.prefix, { fallback: OPENTELEMETRY_SINK_DEFAULTS.prefix, allowEmpty: true, fix: "E.g. 'myapp.'; leave it out for ''." });
    this.meterName = checkString(prefix, 'meterName', options.meterName, { fallback: OPENTELEMETRY_SINK_DEFAULTS.meterName });
    if (options.meter !== undefined && (options.meter === null || typeof (options.meter as Meter).createCounter !== 'function')) {
      throw new SinkConfigError(
        `${prefix}: option "meter" must be an OpenTelemetry Meter (meterProvider.getMeter('my-app')). Leave it out to use metrics.getMeter('${this.meterName}').`,
        'meter',
      );
    }
    this.givenMeter = options.meter;
    this.catalog = new MetricCatalog<OpenTelemetryMetricDeclaration, Instrument>(
      {
        prefix,
        targetName: (name) => namePrefix + name,
        nameProblem: (target) =>
          OTEL_INSTRUMENT_NAME.test(target)
            ? undefined
            : `gives the instrument name "${target}", which OpenTelemetry does not accept: start with a letter, then up to 254 letters, digits, _, ., - or /.`,
        labelProblem: () => undefined,
        maxLabelSets: checkMaxLabelSets(prefix, options.maxLabelSets, OPENTELEMETRY_SINK_DEFAULTS.maxLabelSets),
        warn: (message) => this.logger.warn(message),
      },
      options.metrics,
    );
    for (const entry of this.catalog.entries()) {
      const { help, unit } = entry.declaration;
      if (help !== undefined && typeof help !== 'string') throw new SinkConfigError(`${prefix}: "help" of "${entry.declaration.name}" must be a string.`, 'help');
      if (unit !== undefined && typeof unit !== 'string') throw new SinkConfigError(`${prefix}: "unit" of "${entry.declaration.name}" must be a string such as 'ms'.`, 'unit');
    }
  }

  /** Checks a metric item when it is deferred; see the class documentation. */
  validate(item: SinkItem): void {
    if (item.kind !== 'metric') return;
    const entry = this.catalog.accept(item);
    if (item.op === 'add' && entry.type !== 'upDownCounter' && entry.type !== 'counter') {
      throw new Error(
        `metric "${item.name}" is an OpenTelemetry ${entry.type}: it records values and cannot add to one. Declare it as an upDownCounter to inc()/dec() it.`,
      );
    }
  }

  /** How the metric an item names is declared (its type and label names), for handles that need it; `undefined` when it is not. */
  declarationOf(name: string): { type: MetricInstrumentType; labelNames: readonly string[] } | undefined {
    const entry = this.catalog.find(name);
    return entry && { type: entry.type, labelNames: entry.labelNames };
  }

  async write(batch: readonly SinkItem[], _context?: SinkWriteContext): Promise<void | SinkWriteResult> {
    this.resolveMeter();
    return eachItem(batch, 'metric', `OpenTelemetryMetricsSink "${this.name}"`, (item) => this.record(item));
  }

  /** The given meter, or the global provider's; instruments made on the no-op meter are made again once a provider is there. */
  private resolveMeter(): void {
    if (this.givenMeter) {
      this.meter = this.givenMeter;
      return;
    }
    if (this.meter && this.meter !== createNoopMeter()) return;
    const meter = metrics.getMeter(this.meterName);
    if (meter === createNoopMeter()) {
      if (!this.warnedNoop) {
        this.warnedNoop = true;
        this.logger.warn(
          `OpenTelemetryMetricsSink "${this.name}": no OpenTelemetry MeterProvider is registered, so metric items are recorded to the no-op meter ` +
            '(not kept). Start the OpenTelemetry SDK (or call metrics.setGlobalMeterProvider) before the app serves requests, or pass "meter".',
        );
      }
    } else if (this.meter !== undefined) {
      for (const entry of this.catalog.entries()) entry.instrument = undefined; // made on the no-op meter
    }
    this.meter = meter;
  }

  private record(item: MetricItem): void {
    const entry = this.catalog.accept(item);
    const instrument = this.instrument(entry);
    const attributes = item.tags;
    switch (entry.type) {
      case 'counter':
      case 'upDownCounter':
        (instrument as Counter | UpDownCounter).add(item.value, attributes);
        break;
      case 'histogram':
      case 'gauge':
        (instrument as Histogram | Gauge).record(item.value, attributes);
        break;
    }
  }

  private instrument(entry: Entry): Instrument {
    if (entry.instrument) return entry.instrument;
    const meter = this.meter ?? this.givenMeter ?? metrics.getMeter(this.meterName);
    const { help, unit, buckets } = entry.declaration;
    const options: MetricOptions = {};
    if (help) options.description = help;
    if (unit) options.unit = unit;
    if (buckets) options.advice = { explicitBucketBoundaries: [...buckets] };
    switch (entry.type) {
      case 'counter':
        return (entry.instrument = meter.createCounter(entry.target, options));
      case 'upDownCounter':
        return (entry.instrument = meter.createUpDownCounter(entry.target, options));
      case 'histogram':
        return (entry.instrument = meter.createHistogram(entry.target, options));
      case 'gauge':
        if (typeof meter.createGauge !== 'function') {
          throw new Error(`gauge "${entry.target}" needs a Meter with createGauge (@opentelemetry/api 1.9 or later); upgrade it or declare an 'upDownCounter'.`);
        }
        return (entry.instrument = meter.createGauge(entry.target, options));
    }
  }
}
