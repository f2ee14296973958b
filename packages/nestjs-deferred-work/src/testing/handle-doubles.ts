import type { LoggerService, Provider } from '@nestjs/common';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import { ScopeOpener } from '../capture/scope-opener';
import type { DeferredItemOptions, DeferredJobOptions, DeferredLogLevel, DeferredLogOptions, DeferredMetricOptions } from '../core/items/deferred-item.interface';
import { newItemId } from '../core/items/item-id';
import { deferredClient } from '../nest/handles/deferred-client.handle';
import type { DeferredHandles } from '../nest/handles/deferred-handles';
import { DeferredLogger } from '../nest/handles/deferred-logger';
import { type DeferredMetricHandle, deferredMetric } from '../nest/handles/deferred-metric.handle';
import { DeferredMetrics } from '../nest/handles/deferred-metrics.service';
import { DeferredPinoLogger } from '../nest/handles/deferred-pino-logger';
import { deferredQueue } from '../nest/handles/deferred-queue.handle';
import { deferredClientToken, deferredMetricToken, deferredPinoLoggerToken, deferredQueueToken, handlesInUse } from '../nest/handles/handle-tokens';
import type { DeferredHandleNames } from '../nest/handles/handle.providers';
import type { DeferredClient, DeferredQueue } from '../nest/handles/handle-types';

/**
 * What a double recorded: one entry per call, in order, with the options as the call gave them — `when`
 * and `sink` included (`undefined` when left out: the route's or the module's default then applies).
 */
export type RecordedCall =
  | { kind: 'job'; id: string; queue: string; name: string; data: unknown; opts?: DeferredJobOptions }
  | { kind: 'log'; id: string; level: DeferredLogLevel; message: string; fields?: Record<string, unknown>; opts?: DeferredLogOptions }
  | { kind: 'metric'; id: string; name: string; value: number; tags?: Record<string, string>; opts?: DeferredMetricOptions }
  | { kind: 'callback'; fn: (signal: AbortSignal) => unknown; opts?: DeferredItemOptions };

/** A recorded call of one kind. */
export type RecordedCallOf<K extends RecordedCall['kind']> = Extract<RecordedCall, { kind: K }>;

/**
 * Doubles of what a handler defers through, for unit tests with no `DeferredWorkModule`: the deferred
 * handles, the `@Deferred()` scope (`scope`) and what `@AfterResponse()` binds. Each records its calls
 * (`calls`, and `jobs`/`logs`/`metrics`/`callbacks` by kind) instead of deferring them; nothing runs.
 *
 * `providers()` makes a controller with `@AfterResponse()` routes compile in
 * `Test.createTestingModule({ controllers: [OrdersController], providers: [...doubles.providers()] })`;
 * call its methods directly, passing `doubles.scope` for a `@Deferred()` parameter and
 * `doubles.queue('mail')` (and the others) for a handle parameter:
 *
 * ```ts
 * const doubles = new DeferredHandleDoubles();
 * const moduleRef = await Test.createTestingModule({ controllers: [OrdersController], providers: doubles.providers() }).compile();
 * await moduleRef.get(OrdersController).place('A-1', doubles.scope);
 * expect(doubles.jobs).toMatchObject([{ queue: 'mail', name: 'confirm', opts: { when: 'always' } }]);
 * ```
 *
 * For a test through HTTP with the real pipeline, use `withMemorySinks()` instead.
 */
export class DeferredHandleDoubles {
  /** Every call recorded so far, in order. */
  readonly calls: RecordedCall[] = [];

  /** The `DeferredScope` to pass for a `@Deferred()` parameter: its `job`, `log`, `metric` and `run` are recorded. */
  readonly scope: DeferredScope = {
    job: (queue, name, data, opts) => this.record({ kind: 'job', id: newItemId(), queue, name, data, opts }),
    log: (level, message, fields, opts) => this.record({ kind: 'log', id: newItemId(), level, message, fields, opts }),
    metric: (name, value, tags, opts) => this.record({ kind: 'metric', id: newItemId(), name, value, tags, opts }),
    run: (fn, opts) => void this.calls.push({ kind: 'callback', fn, opts }),
  };

  /** The jobs (and events: a client's `emit` is a job for the client's sink, `opts.sink` its name) recorded so far. */
  get jobs(): Array<RecordedCallOf<'job'>> {
    return this.ofKind('job');
  }

  /** The log records recorded so far (`opts.context`: the logger's context). */
  get logs(): Array<RecordedCallOf<'log'>> {
    return this.ofKind('log');
  }

  /** The metric points recorded so far. */
  get metrics(): Array<RecordedCallOf<'metric'>> {
    return this.ofKind('metric');
  }

  /** The `run(fn)` callbacks recorded so far; none has run (call `fn` to run one). */
  get callbacks(): Array<RecordedCallOf<'callback'>> {
    return this.ofKind('callback');
  }

  /**
   * A queue handle double (`add`, `addBulk`, resolving with receipts as the real handle does); its
   * other members throw (there is no real queue). `Q`: the type your code declares, e.g.
   * `DeferredQueue<Queue>`; default `DeferredQueue`.
   */
  queue<Q extends object = DeferredQueue>(name: string): Q {
    return deferredQueue<Q>(name, () => this.scope, () => undefined);
  }

  /**
   * A client handle double (`emit`, recorded as a job for the sink named after the client; its other
   * members throw). `C`: the type your code declares, e.g. `DeferredClient<ClientProxy>`; default `DeferredClient`.
   */
  client<C extends object = DeferredClient>(name: string): C {
    return deferredClient<C>(name, () => this.scope, () => undefined);
  }

  /** A metric handle double (prom-client's calls; positional `labels()` needs `labelNames`). */
  metric(name: string, labelNames?: readonly string[]): DeferredMetricHandle {
    return deferredMetric(name, () => this.scope, () => (labelNames ? { type: 'counter', labelNames } : undefined));
  }

  /** A logger double, as `new DeferredLogger(context)` (or `@Deferred.logger(context)`). */
  logger(context?: string): LoggerService {
    return new DeferredLogger(context, () => this.scope);
  }

  /** A `PinoLogger`-style logger double, as `@InjectDeferredPinoLogger(context)`. */
  pinoLogger(context?: string): DeferredPinoLogger {
    return new DeferredPinoLogger(context, () => this.scope);
  }

  /**
   * The providers a testing module needs in place of `DeferredWorkModule`: the handle doubles under the
   * handles' tokens (what `@InjectDeferredQueue()` and the others inject), `DeferredMetrics`, and a
   * stand-in for what `DeferredWorkInterceptor` — bound by `@AfterResponse()` — injects (it passes every
   * request through). Spread them into `providers`.
   *
   * @param names The handles to provide, by kind. Default: none besides those always provided — every
   * name the `@InjectDeferredQueue()`, `@InjectDeferredClient()`, `@InjectDeferredMetric()` and
   * `@InjectDeferredPinoLogger()` decorators of the code loaded so far asked for.
   */
  providers(names: DeferredHandleNames = {}): Provider[] {
    const all = (given: readonly string[] | undefined, used: ReadonlySet<string>) => [...new Set([...(given ?? []), ...used])];
    const handles = { current: () => this.scope, metric: (name: string) => this.metric(name) } as unknown as DeferredHandles;
    return [
      ...all(names.queues, handlesInUse.queues).map((name) => ({ provide: deferredQueueToken(name), useValue: this.queue(name) })),
      ...all(names.clients, handlesInUse.clients).map((name) => ({ provide: deferredClientToken(name), useValue: this.client(name) })),
      ...all(names.metrics, handlesInUse.metrics).map((name) => ({ provide: deferredMetricToken(name), useValue: this.metric(name) })),
      ...all(names.pinoLoggers, handlesInUse.pinoLoggers).map((context) => ({
        provide: deferredPinoLoggerToken(context),
        useValue: this.pinoLogger(context || undefined),
      })),
      { provide: DeferredMetrics, useValue: new DeferredMetrics(handles) },
      { provide: ScopeOpener, useValue: this.openerDouble() },
    ];
  }

  /** Forgets what was recorded. */
  clear(): void {
    this.calls.length = 0;
  }

  /**
   * What `DeferredWorkInterceptor` gets in place of the request-scope opener: every request's scope is
   * `scope`, which is not a request collector, so the interceptor passes the request through.
   */
  private openerDouble(): Pick<ScopeOpener, 'open' | 'settings' | 'direct'> {
    return { open: () => this.scope, settings: () => null, direct: this.scope as ScopeOpener['direct'] };
  }

  private ofKind<K extends RecordedCall['kind']>(kind: K): Array<RecordedCallOf<K>> {
    return this.calls.filter((c): c is RecordedCallOf<K> => c.kind === kind);
  }

  private record(call: Exclude<RecordedCall, { kind: 'callback' }>): string {
    this.calls.push(call);
    return call.id;
  }
}
