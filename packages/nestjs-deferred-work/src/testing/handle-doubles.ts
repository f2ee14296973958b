import type { LoggerService, Provider } from '@nestjs/common';
import type { DeferredScope } from '../capture/deferred-scope.interface';
import type { DeferredItemOptions, DeferredJobOptions, DeferredLogLevel, DeferredLogOptions, DeferredMetricOptions } from '../core/items/deferred-item.interface';
import { newItemId } from '../core/items/item-id';
import { deferredClient } from '../nest/handles/deferred-client.handle';
import { DeferredLogger } from '../nest/handles/deferred-logger';
import { type DeferredMetricHandle, deferredMetric } from '../nest/handles/deferred-metric.handle';
import { deferredQueue } from '../nest/handles/deferred-queue.handle';
import { deferredClientToken, deferredMetricToken, deferredQueueToken } from '../nest/handles/handle-tokens';
import type { DeferredHandleNames } from '../nest/handles/handle.providers';

/** What a handle double recorded: one entry per call, in order. */
export type RecordedCall =
  | { kind: 'job'; id: string; queue: string; name: string; data: unknown; opts?: DeferredJobOptions }
  | { kind: 'log'; id: string; level: DeferredLogLevel; message: string; fields?: Record<string, unknown>; opts?: DeferredLogOptions }
  | { kind: 'metric'; id: string; name: string; value: number; tags?: Record<string, string>; opts?: DeferredMetricOptions }
  | { kind: 'callback'; opts?: DeferredItemOptions };

/**
 * Doubles of the deferred handles for unit tests of a service, with no `DeferredWorkModule`: each
 * handle records its calls (`calls`, and `jobs`/`logs`/`metrics` by kind) instead of deferring them.
 * Provide them in place of the handles with `providers()`:
 *
 * ```ts
 * const doubles = new DeferredHandleDoubles();
 * const moduleRef = await Test.createTestingModule({
 *   providers: [MailService, ...doubles.providers({ queues: ['mail'], clients: ['EVENTS'] })],
 * }).compile();
 * await moduleRef.get(MailService).welcome('u1');
 * expect(doubles.jobs).toEqual([expect.objectContaining({ queue: 'mail', name: 'welcome' })]);
 * ```
 */
export class DeferredHandleDoubles {
  readonly calls: RecordedCall[] = [];
  private readonly scope: DeferredScope = {
    job: (queue, name, data, opts) => this.record({ kind: 'job', id: newItemId(), queue, name, data, opts }),
    log: (level, message, fields, opts) => this.record({ kind: 'log', id: newItemId(), level, message, fields, opts }),
    metric: (name, value, tags, opts) => this.record({ kind: 'metric', id: newItemId(), name, value, tags, opts }),
    run: (_fn, opts) => void this.calls.push({ kind: 'callback', opts }),
  };

  /** The jobs (and events: a client's `emit` is a job for the client's sink) recorded so far. */
  get jobs(): Array<Extract<RecordedCall, { kind: 'job' }>> {
    return this.calls.filter((c): c is Extract<RecordedCall, { kind: 'job' }> => c.kind === 'job');
  }

  get logs(): Array<Extract<RecordedCall, { kind: 'log' }>> {
    return this.calls.filter((c): c is Extract<RecordedCall, { kind: 'log' }> => c.kind === 'log');
  }

  get metrics(): Array<Extract<RecordedCall, { kind: 'metric' }>> {
    return this.calls.filter((c): c is Extract<RecordedCall, { kind: 'metric' }> => c.kind === 'metric');
  }

  /** A queue handle double (`add`, `addBulk`); its other members throw (there is no real queue). */
  queue<Q extends object = { add(name: string, data: unknown, opts?: object): Promise<unknown> }>(name: string): Q {
    return deferredQueue<Q>(name, () => this.scope, () => undefined);
  }

  /** A client handle double (`emit`). */
  client<C extends object = { emit(pattern: string, data: unknown): unknown }>(name: string): C {
    return deferredClient<C>(name, () => this.scope, () => undefined);
  }

  /** A metric handle double (prom-client's calls; positional `labels()` needs `labelNames`). */
  metric(name: string, labelNames?: readonly string[]): DeferredMetricHandle {
    return deferredMetric(name, () => this.scope, () => (labelNames ? { type: 'counter', labelNames } : undefined));
  }

  /** A logger double, as `new DeferredLogger(context)`. */
  logger(context?: string): LoggerService {
    return new DeferredLogger(context, () => this.scope);
  }

  /** Providers of the doubles under the handles' tokens (what `@InjectDeferredQueue()` and the others inject). */
  providers(names: DeferredHandleNames): Provider[] {
    return [
      ...(names.queues ?? []).map((name) => ({ provide: deferredQueueToken(name), useValue: this.queue(name) })),
      ...(names.clients ?? []).map((name) => ({ provide: deferredClientToken(name), useValue: this.client(name) })),
      ...(names.metrics ?? []).map((name) => ({ provide: deferredMetricToken(name), useValue: this.metric(name) })),
    ];
  }

  /** Forgets what was recorded. */
  clear(): void {
    this.calls.length = 0;
  }

  private record(call: Extract<RecordedCall, { id: string }>): string {
    this.calls.push(call);
    return call.id;
  }
}
