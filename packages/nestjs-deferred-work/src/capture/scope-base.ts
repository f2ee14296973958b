import type {
  DeferredItem,
  DeferredItemOptions,
  DeferredJobOptions,
  DeferredKind,
  DeferredLogLevel,
  RunWhen,
  SinkKind,
} from '../core/items/deferred-item.interface';
import type { DeferredScope } from './deferred-scope.interface';

/** A route's resolved `@AfterResponse()` settings. */
export interface RouteSettings {
  when: Readonly<Record<DeferredKind, RunWhen>>;
  sinks: Readonly<Partial<Record<SinkKind, string>>>;
  /** Measure handler and send time (the `timing` option). */
  timing?: boolean;
  /** The route's path template, e.g. `/orders/:id` (used as the `route` tag when timing). */
  path?: string;
}

/** Builds items from the public calls; subclasses decide where an item goes. */
export abstract class ScopeBase implements DeferredScope {
  constructor(protected readonly route: RouteSettings) {}

  protected abstract add(item: DeferredItem): void;

  job(queue: string, name: string, data: unknown, opts?: DeferredJobOptions): void {
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
    this.add({
      kind: 'job',
      queue,
      name,
      data,
      opts: jobOpts,
      when: opts?.when ?? this.route.when.job,
      sink: opts?.sink ?? this.route.sinks.job,
      createdAt: Date.now(),
    });
  }

  log(level: DeferredLogLevel, message: string, fields?: Record<string, unknown>, opts?: DeferredItemOptions): void {
    this.add({
      kind: 'log',
      level,
      message,
      fields,
      when: opts?.when ?? this.route.when.log,
      sink: opts?.sink ?? this.route.sinks.log,
      createdAt: Date.now(),
    });
  }

  metric(name: string, value: number, tags?: Record<string, string>, opts?: DeferredItemOptions): void {
    this.add({
      kind: 'metric',
      name,
      value,
      tags,
      when: opts?.when ?? this.route.when.metric,
      sink: opts?.sink ?? this.route.sinks.metric,
      createdAt: Date.now(),
    });
  }

  run(fn: (signal: AbortSignal) => unknown, opts?: Omit<DeferredItemOptions, 'sink'>): void {
    this.add({ kind: 'callback', fn, when: opts?.when ?? this.route.when.callback, createdAt: Date.now() });
  }
}
