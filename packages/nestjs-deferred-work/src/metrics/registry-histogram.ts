import type { Metric, Registry } from 'prom-client';

/**
 * One labelled series of a histogram: per-bucket counts (not cumulative), sum and count. `observe`
 * allocates nothing and looks nothing up: the caller keeps the series.
 */
export class HistogramSeries {
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    if (i < bounds.length) this.counts[i]++;
    this.sum += value;
    this.count++;
  }

  zero(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }

  /** The series in prom-client's exposition shape: cumulative buckets, `+Inf`, `_sum`, `_count`. */
  values(name: string): Array<{ labels: Record<string, string | number>; value: number; metricName: string }> {
    const out: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    let cumulative = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      cumulative += this.counts[i];
      out.push({ labels: { le: this.bounds[i], ...this.labels }, value: cumulative, metricName: `${name}_bucket` });
    }
    out.push({ labels: { le: '+Inf', ...this.labels }, value: this.count, metricName: `${name}_bucket` });
    out.push({ labels: { ...this.labels }, value: this.sum, metricName: `${name}_sum` });
    out.push({ labels: { ...this.labels }, value: this.count, metricName: `${name}_count` });
    return out;
  }
}

/**
 * A histogram registered in a prom-client registry whose series the library keeps itself: an
 * observation is a bucket search and three additions (prom-client's own `observe` builds and hashes
 * a label object each time); the exposition text is built at scrape time only.
 */
export class RegistryHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series: HistogramSeries[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  /** A new series with `labels` (kept by the caller, which creates each label set once). */
  child(labels: Record<string, string>): HistogramSeries {
    const series = new HistogramSeries(labels, this.bounds);
    this.series.push(series);
    return series;
  }

  /** Registers it in `registry` (prom-client reads any metric object with `get()`). */
  register(registry: Registry): this {
    registry.registerMetric(this as unknown as Metric<string>);
    return this;
  }

  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: ReturnType<HistogramSeries['values']> }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.series.flatMap((s) => s.values(this.name)) };
  }

  /** `registry.resetMetrics()`: every series back to zero (kept, so that callers' series stay exported). */
  reset(): void {
    for (const series of this.series) series.zero();
  }
}
