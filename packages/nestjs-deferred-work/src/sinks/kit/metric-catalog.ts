import type { MetricItem } from '../../core/items/deferred-item.interface';
import { checkWholeNumber, describeValue } from './option-checks';
import { SinkConfigError } from './sink-config.error';

/**
 * How a metric item's `value` is applied:
 * - `counter`: added to a total that only goes up (a value below 0 is rejected);
 * - `histogram`: one observation (a latency, a size);
 * - `gauge`: the current value, replacing the last one (set);
 * - `upDownCounter`: added to a total that may go down (a negative value subtracts).
 */
export type MetricInstrumentType = 'counter' | 'histogram' | 'gauge' | 'upDownCounter';

/** Every {@link MetricInstrumentType}. */
export const METRIC_INSTRUMENT_TYPES: readonly MetricInstrumentType[] = Object.freeze(['counter', 'histogram', 'gauge', 'upDownCounter']);

/** One metric a metrics sink takes, declared up front. What each sink adds is in its own options. */
export interface MetricDeclaration {
  /** The name `metric()` calls use (e.g. `orders.created`); the sink's name rule maps it to the destination's name. */
  name: string;
  /** How values are applied (see {@link MetricInstrumentType}). */
  type: MetricInstrumentType;
  /** Label (tag) names items may carry. An item with another tag is rejected. Default `[]`. */
  labelNames?: readonly string[];
  /** Histogram bucket upper bounds, strictly increasing. Histograms only. Default: the library's (prom-client's or the OpenTelemetry SDK's). */
  buckets?: readonly number[];
  /** Most distinct label sets (series) for this metric; a new one beyond it is rejected. Default: the sink's `maxLabelSets`. */
  maxLabelSets?: number;
}

/** A checked declaration, with what the catalog tracks for it. */
export interface CatalogEntry<D extends MetricDeclaration, I> {
  /** The declaration as given. */
  readonly declaration: D;
  /** The name in the destination (after the sink's name rule). */
  readonly target: string;
  readonly type: MetricInstrumentType;
  readonly labelNames: readonly string[];
  readonly maxLabelSets: number;
  /** Label sets seen so far (keys), at most `maxLabelSets`. */
  readonly labelSets: Set<string>;
  /** The destination's instrument, once created. */
  instrument?: I;
  /** When a new label set was last refused by the limit (0: never), for logging once per episode. */
  lastOverAt: number;
  /** Label sets refused by the limit since the sink started. */
  overLimit: number;
}

/** What a sink tells the catalog about its destination's rules. */
export interface CatalogRules {
  /** Prefix of every error message, e.g. `PrometheusSink "prometheus"`. */
  prefix: string;
  /** The sink's name rule: an item's or declaration's name → the destination's name. */
  targetName(name: string): string;
  /** Why a destination name is invalid (and how to fix it), or `undefined` when it is fine. */
  nameProblem(target: string, declared: string): string | undefined;
  /** Why a label name is invalid for this metric (and how to fix it), or `undefined`. */
  labelProblem(label: string, declaration: MetricDeclaration): string | undefined;
  /** Default of `maxLabelSets`. */
  maxLabelSets: number;
  /** Logs a warning (the cardinality limit, once per episode). */
  warn(message: string): void;
}

/** A metric stays "over its limit" (one episode, logged once) until a minute passes without a refusal. */
const EPISODE_GAP_MS = 60_000;

const describe = describeValue;

/**
 * The metrics a metrics sink declared up front, and the checks every item passes before it is
 * accepted: a declared name, a value its type allows, declared labels only, and a bounded number of
 * label sets per metric. Shared by the Prometheus and OpenTelemetry sinks.
 */
export class MetricCatalog<D extends MetricDeclaration, I> {
  private readonly byTarget = new Map<string, CatalogEntry<D, I>>();
  /** Item names already resolved to an entry (only names that resolve, so it stays bounded by use). */
  private readonly byItemName = new Map<string, CatalogEntry<D, I>>();

  constructor(
    private readonly rules: CatalogRules,
    declarations: unknown,
  ) {
    const { prefix } = rules;
    if (!Array.isArray(declarations) || declarations.length === 0) {
      throw new SinkConfigError(
        `${prefix}: option "metrics" must be a non-empty array of declarations, got ${describe(declarations)}. ` +
          "Declare every metric up front, e.g. metrics: [{ name: 'orders.created', type: 'counter', help: 'Orders created', labelNames: ['channel'] }].",
        'metrics',
      );
    }
    declarations.forEach((declaration: unknown, index) => {
      const entry = this.check(declaration, index);
      const clash = this.byTarget.get(entry.target);
      if (clash) {
        throw new SinkConfigError(
          `${prefix}: metrics[${index}] "${entry.declaration.name}" and "${clash.declaration.name}" both map to "${entry.target}". ` +
            'Declare each metric once (names differing only in characters the name rule replaces are the same metric).',
          `metrics[${index}].name`,
        );
      }
      this.byTarget.set(entry.target, entry);
      this.byItemName.set(entry.declaration.name, entry);
    });
  }

  /** Every entry, in declaration order. */
  entries(): IterableIterator<CatalogEntry<D, I>> {
    return this.byTarget.values();
  }

  /** The entry of an item's name, or `undefined` when no declaration maps to it. */
  find(name: string): CatalogEntry<D, I> | undefined {
    let entry = this.byItemName.get(name);
    if (entry === undefined && typeof name === 'string') {
      entry = this.byTarget.get(this.rules.targetName(name));
      if (entry && this.byItemName.size < 4 * this.byTarget.size + 64) this.byItemName.set(name, entry);
    }
    return entry;
  }

  /**
   * Checks a metric item and claims its label set (counted against the limit). Returns its entry;
   * throws an `Error` that says what is wrong and how to fix it. Calling it again for the same item
   * is harmless (its label set is already claimed).
   */
  accept(item: MetricItem): CatalogEntry<D, I> {
    const entry = this.find(item.name);
    if (!entry) {
      const declared = [...this.byTarget.values()].slice(0, 10).map((e) => `"${e.declaration.name}"`);
      throw new Error(
        `metric "${String(item.name)}" (${this.rules.targetName(String(item.name))}) is not declared. ` +
          `Add it to the sink's "metrics" option ({ name, type, help, labelNames }), or use a declared name: ${declared.join(', ')}` +
          (this.byTarget.size > 10 ? ', …' : '') +
          '.',
      );
    }
    const ownType = (item as { type?: unknown }).type;
    if (ownType !== undefined && ownType !== entry.type) {
      throw new Error(
        `metric "${item.name}" says its type is ${describe(ownType)}, but it is declared as a ${entry.type}. ` +
          'Send it with the declared type, or change the declaration.',
      );
    }
    const value = item.value;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new Error(`metric "${item.name}" needs a finite number value, got ${describe(value)}.`);
    }
    if (entry.type === 'counter' && value < 0) {
      throw new Error(
        `metric "${item.name}" is a counter and counters only go up; got ${value}. ` +
          "Declare it as an 'upDownCounter' (a value that is added, may be negative) or a 'gauge' (a value that is set).",
      );
    }
    const tags = item.tags;
    let key = '';
    if (tags !== undefined && tags !== null) {
      if (typeof tags !== 'object' || Array.isArray(tags)) {
        throw new Error(`metric "${item.name}" has tags that are ${describe(tags)}; pass an object of label names to string values.`);
      }
      for (const label in tags) {
        if (!Object.prototype.hasOwnProperty.call(tags, label)) continue;
        if (!entry.labelNames.includes(label)) {
          throw new Error(
            `metric "${item.name}" has the label "${label}", which is not declared (declared: ${entry.labelNames.length ? entry.labelNames.map((l) => `"${l}"`).join(', ') : 'none'}). ` +
              'Add it to the declaration\'s "labelNames", or leave the tag out.',
          );
        }
        const labelValue = (tags as Record<string, unknown>)[label];
        if (typeof labelValue !== 'string' && !(typeof labelValue === 'number' && Number.isFinite(labelValue))) {
          throw new Error(`metric "${item.name}": label "${label}" is ${describe(labelValue)}; label values are strings (convert it with String(...)).`);
        }
      }
      if (entry.labelNames.length > 0) key = entry.labelNames.map((label) => String((tags as Record<string, unknown>)[label] ?? '')).join('\u0000');
    }
    if (!entry.labelSets.has(key)) {
      if (entry.labelSets.size >= entry.maxLabelSets) this.overLimit(entry, item.name);
      entry.labelSets.add(key);
    }
    return entry;
  }

  private overLimit(entry: CatalogEntry<D, I>, name: string): never {
    const now = Date.now();
    entry.overLimit++;
    if (entry.lastOverAt === 0 || now - entry.lastOverAt >= EPISODE_GAP_MS) {
      this.rules.warn(
        `${this.rules.prefix}: metric "${entry.target}" reached its limit of ${entry.maxLabelSets} label sets; items with a new ` +
          'label set are rejected and counted (stats().rejected) while this lasts, and this is logged once per episode. ' +
          'Remove high-cardinality labels (user ids, raw URLs) or raise "maxLabelSets".',
      );
    }
    entry.lastOverAt = now;
    throw new Error(
      `metric "${name}" would exceed its limit of ${entry.maxLabelSets} label sets (series). ` +
        'Remove high-cardinality labels (user ids, raw URLs, timestamps), or raise "maxLabelSets" for it.',
    );
  }

  private check(value: unknown, index: number): CatalogEntry<D, I> {
    const { prefix } = this.rules;
    const at = `metrics[${index}]`;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new SinkConfigError(`${prefix}: ${at} must be an object { name, type, help?, labelNames?, buckets? }, got ${describe(value)}.`, at);
    }
    const declaration = value as D;
    const { name, type, labelNames = [], buckets, maxLabelSets = this.rules.maxLabelSets } = declaration;
    if (typeof name !== 'string' || name === '') {
      throw new SinkConfigError(`${prefix}: ${at}.name must be a non-empty string, got ${describe(name)}. Use the name your metric() calls give.`, `${at}.name`);
    }
    const target = this.rules.targetName(name);
    const nameProblem = this.rules.nameProblem(target, name);
    if (nameProblem) throw new SinkConfigError(`${prefix}: ${at}.name ${JSON.stringify(name)}: ${nameProblem}`, `${at}.name`);
    if (!METRIC_INSTRUMENT_TYPES.includes(type)) {
      throw new SinkConfigError(
        `${prefix}: ${at}.type of "${name}" must be one of ${METRIC_INSTRUMENT_TYPES.map((t) => `'${t}'`).join(', ')}, got ${describe(type)}.`,
        `${at}.type`,
      );
    }
    if (!Array.isArray(labelNames)) {
      throw new SinkConfigError(`${prefix}: ${at}.labelNames of "${name}" must be an array of strings, got ${describe(labelNames)}.`, `${at}.labelNames`);
    }
    const seen = new Set<string>();
    for (const label of labelNames as unknown[]) {
      if (typeof label !== 'string' || label === '') {
        throw new SinkConfigError(`${prefix}: ${at}.labelNames of "${name}" must hold non-empty strings, got ${describe(label)}.`, `${at}.labelNames`);
      }
      const problem = this.rules.labelProblem(label, declaration);
      if (problem) throw new SinkConfigError(`${prefix}: ${at}.labelNames of "${name}": label "${label}" ${problem}`, `${at}.labelNames`);
      if (seen.has(label)) throw new SinkConfigError(`${prefix}: ${at}.labelNames of "${name}" has "${label}" twice. List each label once.`, `${at}.labelNames`);
      seen.add(label);
    }
    if (buckets !== undefined) {
      if (type !== 'histogram') {
        throw new SinkConfigError(`${prefix}: ${at} "${name}" is a ${type}; only histograms take "buckets". Remove it or use type 'histogram'.`, `${at}.buckets`);
      }
      const list = buckets as unknown;
      const increasing =
        Array.isArray(list) &&
        list.length > 0 &&
        list.every((b, i) => typeof b === 'number' && Number.isFinite(b) && (i === 0 || b > (list[i - 1] as number)));
      if (!increasing) {
        throw new SinkConfigError(
          `${prefix}: ${at}.buckets of "${name}" must be a non-empty array of finite numbers in strictly increasing order, got ${describe(list)}. ` +
            'E.g. [5, 10, 25, 50, 100, 250, 500, 1000] for milliseconds; leave it out for the default buckets.',
          `${at}.buckets`,
        );
      }
    }
    if (typeof maxLabelSets !== 'number' || !Number.isInteger(maxLabelSets) || maxLabelSets < 1) {
      throw new SinkConfigError(
        `${prefix}: ${at}.maxLabelSets of "${name}" must be a whole number >= 1, got ${describe(maxLabelSets)}. Leave it out for the sink's "maxLabelSets" (${this.rules.maxLabelSets} unless set).`,
        `${at}.maxLabelSets`,
      );
    }
    return {
      declaration,
      target,
      type,
      labelNames: [...(labelNames as string[])],
      maxLabelSets,
      labelSets: new Set(),
      lastOverAt: 0,
      overLimit: 0,
    };
  }
}

/** Checks a sink-wide `maxLabelSets` option. */
export function checkMaxLabelSets(prefix: string, value: unknown, fallback: number): number {
  return checkWholeNumber(prefix, 'maxLabelSets', value, { min: 1, fallback });
}
