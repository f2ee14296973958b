import type {
  DeferredItem,
  DeferredItemOptions,
  DeferredJobOptions,
  DeferredKind,
  DeferredLogLevel,
  DeferredLogOptions,
  DeferredMetricOptions,
  RunWhen,
  SinkKind,
  SinkTarget,
} from '../core/items/deferred-item.interface';
import type { ItemCorrelation } from '../core/items/deferred-item.interface';
import { newItemId } from '../core/items/item-id';
import type { Correlated, Correlator } from './correlation';
import type { DeferredScope } from './deferred-scope.interface';

/** A route's resolved `@AfterResponse()` settings. */
export interface RouteSettings {
  when: Readonly<Record<DeferredKind, RunWhen>>;
  sinks: Readonly<Partial<Record<SinkKind, SinkTarget>>>;
  /** Measure handler and send time (the `timing` option). */
  timing?: boolean;
  /** The route's path template, e.g. `/orders/:id` (used as the `route` tag when timing). */
  path?: string;
  /** The handler, as `OrdersController.create()`: named in the warning about an item it deferred that was rejected. */
  handler?: string;
}

/** Builds items from the public calls; subclasses decide where an item goes. */
export abstract class ScopeBase implements DeferredScope {
  /**
   * @param correlated the request's ids (and OpenTelemetry context), shared by its items
   * @param correlator set when correlation is on: runs `run(fn)` callbacks in the request's context
   */
  constructor(
    protected readonly route: RouteSettings,
    readonly correlated?: Correlated,
    protected readonly correlator?: Correlator,
  ) {}

  protected abstract add(item: DeferredItem): void;

  /** The correlation of the items being built now (the request's; the direct scope reads the current span). */
  protected correlation(): Readonly<ItemCorrelation> | undefined {
    return this.correlated?.correlation;
  }

  /** A callback as it will run: in the request's OpenTelemetry context when there is one. */
  protected callback(fn: (signal: AbortSignal) => unknown): (signal: AbortSignal) => unknown {
    const context = this.correlated?.otelContext;
    return context === undefined || !this.correlator ? fn : this.correlator.bind(fn, context);
  }

  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): string {
    let jobOpts: DeferredJobOptions | undefined;
    if (opts) {
      // Copy only when there is a queue option besides when/sink (no rest-spread on the hot path).
      for (const key in opts) {
        if (key !== 'when' && key !== 'sink') {
          const { when: _when, sink: _sink, ...rest } = opts;
          jobOpts = rest;
          break;
        }
      }
    }
    const id = newItemId();
    this.add({
      kind: 'job',
      queue,
      name,
      data,
      opts: jobOpts,
      when: opts?.when ?? this.route.when.job,
      sink: opts?.sink ?? this.route.sinks.job,
      createdAt: Date.now(),
      correlation: this.correlation(),
      id,
    });
    return id;
  }

  log(level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredLogOptions): string {
    const id = newItemId();
    this.add({
      kind: 'log',
      level,
      message,
      fields,
      context: opts?.context,
      when: opts?.when ?? this.route.when.log,
      sink: opts?.sink ?? this.route.sinks.log,
      createdAt: Date.now(),
      correlation: this.correlation(),
      id,
    });
    return id;
  }

  metric(name: string, value: number, tags?: Record<string, string>, opts?: DeferredMetricOptions): string {
    const id = newItemId();
    this.add({
      kind: 'metric',
      name,
      value,
      tags,
      op: opts?.op,
      when: opts?.when ?? this.route.when.metric,
      sink: opts?.sink ?? this.route.sinks.metric,
      createdAt: Date.now(),
      correlation: this.correlation(),
      id,
    });
    return id;
  }

  run(fn: (signal: AbortSignal) => unknown, opts?: Omit<DeferredItemOptions, 'sink'>): void {
    this.add({ kind: 'callback', fn: this.callback(fn), when: opts?.when ?? this.route.when.callback, createdAt: Date.now(), id: newItemId() });
  }
}
