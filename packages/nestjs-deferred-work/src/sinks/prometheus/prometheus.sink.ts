import { Logger } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry, register as defaultRegistry } from 'prom-client';
import { errorMessage } from '../../core/error-message';
import type { MetricItem, SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import type { DeferredSink } from '../../core/sink.interface';
import { type CatalogEntry, checkMaxLabelSets, MetricCatalog, type MetricInstrumentType } from '../kit/metric-catalog';
import { checkOptionsObject, checkSinkName } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import { PROMETHEUS_LABEL, PROMETHEUS_NAME, prometheusMetricName } from './prometheus-name';
import { PROMETHEUS_SINK_DEFAULTS, type PrometheusMetricDeclaration, type PrometheusSinkOptions } from './prometheus-sink.options';
import { eachItem } from '../kit/each-item';

type PromMetric = Counter<string> | Gauge<string> | Histogram<string>;
type Entry = CatalogEntry<PrometheusMetricDeclaration, PromMetric>;

const CLASSES = { counter: Counter, histogram: Histogram, gauge: Gauge, upDownCounter: Gauge } as const;
const PROM_TYPE = { counter: 'counter', histogram: 'histogram', gauge: 'gauge', upDownCounter: 'gauge' } as const;

/**
 * Updates Prometheus metrics (prom-client) from `metric` items: counters, histograms and gauges
 * declared up front, in the app's registry (prom-client's default `register` unless given one).
 *
 * Every item is checked when it is deferred (`validate`): an undeclared name, an undeclared label, a
 * value its type does not allow, or a label set beyond the metric's `maxLabelSets` is rejected with a
 * message that says how to fix it and counted in `stats().rejected`. The metrics are created in the
 * registry at bootstrap; a metric the app already registered under the same name (e.g. with
 * `@willsoto/nestjs-prometheus`'s `makeCounterProvider`) is reused when its type and labels fit, and
 * fails the bootstrap with the fix when they do not.
 */
export class PrometheusSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[] = ['metric'];
  /** The registry the metrics are in. */
  readonly registry: Registry;
  private readonly prefix: string;
  private readonly catalog: MetricCatalog<PrometheusMetricDeclaration, PromMetric>;

  constructor(options: PrometheusSinkOptions) {
    checkOptionsObject('PrometheusSink', options, '{ metrics: [{ name, type, help, labelNames? }], registry?, prefix?, maxLabelSets? }');
    this.name = checkSinkName('PrometheusSink', options.name, PROMETHEUS_SINK_DEFAULTS.name);
    const prefix = `PrometheusSink "${this.name}"`;
    this.prefix = options.prefix ?? PROMETHEUS_SINK_DEFAULTS.prefix;
    if (typeof this.prefix !== 'string' || (this.prefix !== '' && !PROMETHEUS_LABEL.test(this.prefix))) {
      throw new SinkConfigError(
        `${prefix}: option "prefix" must be '' or start with a letter or _ and hold only letters, digits and _, got ${JSON.stringify(options.prefix)}. ` +
          "E.g. 'myapp_'.",
        'prefix',
      );
    }
    const registry = options.registry ?? defaultRegistry;
    if (registry === null || typeof registry !== 'object' || typeof (registry as Registry).getSingleMetric !== 'function') {
      throw new SinkConfigError(
        `${prefix}: option "registry" must be a prom-client Registry (new Registry(), or prom-client's register). Leave it out for the default registry.`,
        'registry',
      );
    }
    this.registry = registry;
    const logger = new Logger('PrometheusSink');
    this.catalog = new MetricCatalog<PrometheusMetricDeclaration, PromMetric>(
      {
        prefix,
        targetName: (name) => prometheusMetricName(name, this.prefix),
        nameProblem: (target) =>
          PROMETHEUS_NAME.test(target) && !target.startsWith('__') ? undefined : `maps to "${target}", which Prometheus does not accept as a metric name. Use letters, digits, _ and .`,
        labelProblem: (label, declaration) => {
          if (!PROMETHEUS_LABEL.test(label)) return 'is not a valid Prometheus label name. Use letters, digits and _, not starting with a digit.';
          if (label.startsWith('__')) return 'starts with __, which Prometheus reserves. Rename it.';
          if (label === 'le' && declaration.type === 'histogram') return 'is reserved on histograms (bucket bounds). Rename it.';
          return undefined;
        },
        maxLabelSets: checkMaxLabelSets(prefix, options.maxLabelSets, PROMETHEUS_SINK_DEFAULTS.maxLabelSets),
        warn: (message) => logger.warn(message),
      },
      options.metrics,
    );
    for (const entry of this.catalog.entries()) {
      if (typeof entry.declaration.help !== 'string' || entry.declaration.help === '') {
        throw new SinkConfigError(`${prefix}: metric "${entry.declaration.name}" needs a "help" text (Prometheus' HELP line), e.g. 'Orders created'.`, 'help');
      }
    }
  }

  /** Checks a metric item when it is deferred; see the class documentation. */
  validate(item: SinkItem): void {
    if (item.kind !== 'metric') return;
    const entry = this.catalog.accept(item);
    if (item.op === 'add' && entry.type !== 'gauge' && entry.type !== 'upDownCounter' && entry.type !== 'counter') {
      throw new Error(`metric "${item.name}" is a ${entry.type}: it takes observations, not additions. Use observe() / record().`);
    }
  }

  /** How the metric an item names is declared (its type and label names), for handles that need it; `undefined` when it is not. */
  declarationOf(name: string): { type: MetricInstrumentType; labelNames: readonly string[] } | undefined {
    const entry = this.catalog.find(name);
    return entry && { type: entry.type, labelNames: entry.labelNames };
  }

  /** Creates (or finds) every declared metric in the registry; a conflicting one fails the bootstrap. */
  attach(): void {
    for (const entry of this.catalog.entries()) this.instrument(entry);
  }

  async write(batch: readonly SinkItem[], _context?: SinkWriteContext): Promise<void | SinkWriteResult> {
    return eachItem(batch, 'metric', `PrometheusSink "${this.name}"`, (item) => this.apply(item));
  }

  private apply(item: MetricItem): void {
    const entry = this.catalog.accept(item);
    const metric = this.instrument(entry);
    const labels = (item.tags ?? {}) as Record<string, string | number>;
    switch (entry.type) {
      case 'counter':
        (metric as Counter<string>).inc(labels, item.value);
        break;
      case 'histogram':
        (metric as Histogram<string>).observe(labels, item.value);
        break;
      case 'gauge':
        if (item.op === 'add') (metric as Gauge<string>).inc(labels, item.value);
        else (metric as Gauge<string>).set(labels, item.value);
        break;
      case 'upDownCounter':
        (metric as Gauge<string>).inc(labels, item.value);
        break;
    }
  }

  /** The entry's prom-client metric: created in the registry, or the one registered there already if it fits. */
  private instrument(entry: Entry): PromMetric {
    if (entry.instrument) return entry.instrument;
    const { declaration, target, type, labelNames } = entry;
    const existing = this.registry.getSingleMetric(target) as (PromMetric & { labelNames?: readonly string[] }) | undefined;
    const Class = CLASSES[type];
    if (existing) {
      const sameClass = existing instanceof Class || existing.constructor?.name === Class.name;
      const existingLabels = existing.labelNames ?? [];
      const missing = labelNames.filter((label) => !existingLabels.includes(label));
      if (!sameClass || missing.length > 0) {
        throw new SinkConfigError(
          `PrometheusSink "${this.name}": the registry already has a metric "${target}" (${existing.constructor?.name ?? 'unknown type'}, labels ` +
            `[${existingLabels.join(', ')}]) that does not fit the declaration of "${declaration.name}" (a ${type}, so a prom-client ` +
            `${Class.name}, labels [${labelNames.join(', ')}]). Declare it as the registry has it, or use another name or "prefix".`,
          'metrics',
        );
      }
      return (entry.instrument = existing);
    }
    const config = {
      name: target,
      help: declaration.help,
      labelNames: [...labelNames],
      registers: [this.registry],
      ...(type === 'histogram' && declaration.buckets ? { buckets: [...declaration.buckets] } : {}),
    };
    try {
      entry.instrument = new Class(config);
    } catch (error) {
      throw new SinkConfigError(`PrometheusSink "${this.name}": prom-client refused metric "${target}" (a ${PROM_TYPE[type]}): ${errorMessage(error)}`, 'metrics');
    }
    return entry.instrument;
  }
}
