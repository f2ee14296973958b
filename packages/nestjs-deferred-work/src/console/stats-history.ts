import type { DeferredStats } from '../core/stats.interface';

/** What is kept of each sink per sample. */
const FIELDS = ['pending', 'delivered', 'failedWrites', 'retried', 'deadLettered'] as const;
type Field = (typeof FIELDS)[number];

/** Samples kept: an hour at the default interval (10 s); a shorter interval keeps a shorter window. */
export const SAMPLES = 360;
/** Sinks kept at most: 64 × 360 samples × 5 fields × 8 bytes = 900 KiB, under 1 MB with the times. */
export const MAX_SINKS = 64;

/** One series of a sink over the kept window: the times (epoch ms) and the values. */
export interface Series {
  at: number[];
  values: number[];
}

/**
 * @internal
 * The last 360 samples of `stats()` (an hour at the default 10 s), one every `intervalMs` while the console is mounted: per sink its
 * pending items and its counters (delivered, failed writes, retries, dead letters), in preallocated
 * typed arrays (a ring), from which the sparklines and the per-minute rates are read.
 */
export class StatsHistory {
  readonly capacity: number;
  private readonly at: Float64Array;
  private readonly sinks = new Map<string, Float64Array>();
  private next = 0;
  private size = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly read: () => DeferredStats,
    readonly intervalMs: number,
  ) {
    this.capacity = SAMPLES;
    this.at = new Float64Array(this.capacity);
  }

  /** Starts sampling (a first sample now), on an `unref()`'d timer. */
  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample of `stats()` (at `now`). */
  sample(now = Date.now(), stats = this.read()): void {
    const slot = this.next;
    this.at[slot] = now;
    for (const [name, sink] of Object.entries(stats.sinks)) {
      let row = this.sinks.get(name);
      if (!row) {
        if (this.sinks.size >= MAX_SINKS) continue;
        this.sinks.set(name, (row = new Float64Array(this.capacity * FIELDS.length).fill(Number.NaN)));
      }
      for (let f = 0; f < FIELDS.length; f++) row[slot * FIELDS.length + f] = sink[FIELDS[f]!];
    }
    this.next = (slot + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** Bytes the samples take. */
  get bytes(): number {
    return this.at.byteLength + this.sinks.size * this.capacity * FIELDS.length * 8;
  }

  /** When the oldest kept sample was taken (epoch ms), if any. */
  get oldestAt(): number | undefined {
    return this.size === 0 ? undefined : this.at[(this.next - this.size + this.capacity) % this.capacity];
  }

  /** The slots from oldest to newest. */
  private slots(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.size; i++) out.push((this.next - this.size + i + this.capacity) % this.capacity);
    return out;
  }

  private value(sink: string, slot: number, field: Field): number {
    const row = this.sinks.get(sink);
    return row ? row[slot * FIELDS.length + FIELDS.indexOf(field)]! : Number.NaN;
  }

  /** A gauge of a sink over the window (samples where it existed). */
  gauge(sink: string, field: Field): Series {
    const series: Series = { at: [], values: [] };
    for (const slot of this.slots()) {
      const v = this.value(sink, slot, field);
      if (Number.isNaN(v)) continue;
      series.at.push(this.at[slot]!);
      series.values.push(v);
    }
    return series;
  }

  /** A counter of a sink as a rate per minute between consecutive samples. */
  perMinute(sink: string, field: Field): Series {
    const series: Series = { at: [], values: [] };
    let previous: { at: number; v: number } | undefined;
    for (const slot of this.slots()) {
      const v = this.value(sink, slot, field);
      const at = this.at[slot]!;
      if (Number.isNaN(v)) continue;
      if (previous && at > previous.at) {
        series.at.push(at);
        series.values.push((Math.max(0, v - previous.v) * 60_000) / (at - previous.at));
      }
      previous = { at, v };
    }
    return series;
  }

  /**
   * A counter's rate per minute over the last minute: from the newest sample at least a minute before
   * `now` (or the oldest, at least a second before) to `current`. `undefined` without such a sample.
   */
  rateOverLastMinute(sink: string, field: Field, current: number, now = Date.now()): number | undefined {
    let base: { at: number; v: number } | undefined;
    for (const slot of this.slots()) {
      const at = this.at[slot]!;
      const v = this.value(sink, slot, field);
      if (Number.isNaN(v) || now - at < 1000) continue;
      if (now - at >= 60_000 || base === undefined) base = { at, v };
    }
    if (!base) return undefined;
    return (Math.max(0, current - base.v) * 60_000) / (now - base.at);
  }
}
