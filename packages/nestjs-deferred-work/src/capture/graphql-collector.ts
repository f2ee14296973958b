import type { DeferredItem } from '../core/items/deferred-item.interface';
import type { Correlated, Correlator } from './correlation';
import { RequestCollector, type RequestOutcome } from './request-collector';
import { type RouteSettings, ScopeBase } from './scope-base';

/** One call of an `@AfterResponse()` resolver: its field's path in the result, and whether it failed. */
export class ResolverCall {
  failed = false;

  /** @param path the field's path, e.g. `order.items.0.price` */
  constructor(readonly path: string) {}
}

/** `info.path` of a resolver (a linked list from the field up to the root) as `a.b.0.c`. */
export function pathKey(path: { key: string | number; prev?: unknown } | undefined): string {
  let key = '';
  for (let at = path; at; at = at.prev as typeof path) key = key === '' ? String(at.key) : `${at.key}.${key}`;
  return key;
}

/**
 * @internal
 * The one scope of an HTTP request that runs GraphQL resolvers, shared by every resolver of it (and
 * every operation of a batch). Settled by the HTTP response like `RequestCollector`; on top of that,
 * each item deferred through a resolver's {@link ResolverScope} is judged by that resolver's result:
 * its outcome is `failure` when its own call, or an `@AfterResponse()` resolver below it in the result
 * (a path that starts with its own), failed, even though the HTTP response was a 200. Items that reach
 * the request itself (`DeferredWork.forRequest(req)`) are `failure` when any resolver of the request failed.
 */
export class GraphqlCollector extends RequestCollector {
  /** Items deferred by a resolver, with its call; created on the first. */
  private held: Array<{ item: DeferredItem; call: ResolverCall }> | undefined;
  /** Paths of the resolver calls that failed, in the order they failed. */
  private readonly failures: string[] = [];
  /** The HTTP outcome, once known. */
  private httpOutcome: RequestOutcome | undefined;

  /** A resolver call of this request failed (its field is in the result's `errors`). */
  failed(call: ResolverCall): void {
    if (call.failed) return;
    call.failed = true;
    this.failures.push(call.path);
  }

  /** Holds an item deferred by `call` until the response finished, or judges it now if it has. */
  addFor(call: ResolverCall, item: DeferredItem): void {
    if (this.httpOutcome === undefined) (this.held ??= []).push({ item, call });
    else this.releaseAs(item, this.outcomeOf(call));
  }

  protected override conclude(outcome: RequestOutcome, statusCode: number): void {
    this.httpOutcome = outcome;
    // The request's own items: a failed resolver makes the whole request a failure.
    super.conclude(outcome === 'success' && this.failures.length > 0 ? 'failure' : outcome, statusCode);
    const held = this.held;
    this.held = undefined;
    if (held) for (let i = 0; i < held.length; i++) this.releaseAs(held[i].item, this.outcomeOf(held[i].call));
  }

  /** `aborted` or `failure` from HTTP first; then the call's own result and those of the calls below it. */
  private outcomeOf(call: ResolverCall): RequestOutcome {
    const http = this.httpOutcome!;
    if (http !== 'success') return http;
    if (call.failed) return 'failure';
    const prefix = `${call.path}.`;
    for (const failed of this.failures) if (failed.startsWith(prefix)) return 'failure';
    return 'success';
  }
}

/**
 * @internal
 * What `@Deferred()` (and `asyncContext`) give one call of an `@AfterResponse()` resolver: its own
 * `when`/`sinks` settings, items held by the request's {@link GraphqlCollector} and judged by this call.
 */
export class ResolverScope extends ScopeBase {
  constructor(
    route: RouteSettings,
    readonly collector: GraphqlCollector,
    readonly call: ResolverCall,
    correlated?: Correlated,
    correlator?: Correlator,
  ) {
    super(route, correlated, correlator);
  }

  protected add(item: DeferredItem): void {
    this.collector.addFor(this.call, item);
  }
}
