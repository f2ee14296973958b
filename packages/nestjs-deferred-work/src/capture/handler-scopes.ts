import { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { DeferredResponseNotFoundError } from '../core/errors/deferred-response-not-found.error';
import { Dispatcher } from '../pipeline/dispatcher';
import { Correlator } from './correlation';
import type { DeferredScope } from './deferred-scope.interface';
import { GraphqlCollector, pathKey, ResolverCall, ResolverScope } from './graphql-collector';
import { RequestCollector } from './request-collector';
import { rememberScope, scopeOfRequest } from './request-scopes';
import { RequestTracker } from './request-tracker';
import { findOpener } from './runtime-registry';
import { ScopeOpener } from './scope-opener';

/** The part of Node's `ServerResponse` the GraphQL scope listens to. */
interface RawResponse {
  on(event: 'close', listener: () => void): unknown;
  readonly writableFinished: boolean;
  readonly closed?: boolean;
  readonly statusCode: number;
  readonly req?: unknown;
}

/** The key a request's GraphQL scope is remembered under (in place of an HTTP route's handler). */
const GRAPHQL_REQUEST = Object.freeze({ graphql: true });

/**
 * Scopes of resolver calls (keyed by their `info`, one per field call) and of microservice messages
 * (keyed by their context object), opened by `DeferredWorkInterceptor` and read by `@Deferred()`.
 * On `globalThis` under a registered symbol, like the request scopes, so the ESM and CommonJS builds
 * loaded side by side share them.
 */
const callScopes: WeakMap<object, { handler: object; scope: DeferredScope }> = ((
  globalThis as Record<symbol, WeakMap<object, { handler: object; scope: DeferredScope }> | undefined>
)[Symbol.for('nestjs-deferred-work.call-scopes')] ??= new WeakMap());

/** Each application's `HandlerScopes`, by its opener (what `@Deferred()` finds through the request). */
const handlerScopesOf = new WeakMap<ScopeOpener, HandlerScopes>();

/** The scope the interceptor opened for this call (`info` of a resolver, the context of a message), if any. */
export function callScopeOf(key: unknown, handler: object): DeferredScope | undefined {
  if (typeof key !== 'object' || key === null) return undefined;
  const opened = callScopes.get(key);
  return opened !== undefined && opened.handler === handler ? opened.scope : undefined;
}

/**
 * The HTTP response of a GraphQL request, found without a context factory of the user's where possible:
 * - Mercurius puts the Fastify reply on the context (`reply.raw`); a user's context may put `reply` or `res` there;
 * - Apollo on Express: Nest's context holds Express's `req`, which links its response (`req.res`);
 * - Apollo on Fastify: the context holds only Fastify's request; its Node request's connection is
 *   writing its response (`socket._httpMessage`, checked to answer this very request: `res.req`).
 * `undefined` when there is no HTTP request (a subscription over WebSocket).
 */
function responseOf(context: Record<string, unknown> | undefined): RawResponse | undefined | null {
  if (!context) return undefined;
  const reply = (context.reply ?? context.res) as { raw?: RawResponse } | RawResponse | undefined;
  if (reply) return reply instanceof ServerResponse ? reply : ((reply as { raw?: RawResponse }).raw ?? (reply as RawResponse));
  const request = context.req as { res?: RawResponse; raw?: IncomingMessage; headers?: Record<string, unknown> } | undefined;
  if (!request) return undefined;
  if (request.res instanceof ServerResponse) return request.res;
  const raw = request instanceof IncomingMessage ? request : request.raw;
  if (!(raw instanceof IncomingMessage)) return undefined;
  if (raw.headers.upgrade !== undefined) return undefined; // a WebSocket's upgrade request: no response to wait for
  const writing = (raw.socket as unknown as { _httpMessage?: RawResponse } | null)?._httpMessage;
  return writing instanceof ServerResponse && writing.req === raw ? writing : null;
}

/**
 * @internal
 * Opens the scopes of `@AfterResponse()` handlers outside HTTP routes, for `DeferredWorkInterceptor`:
 * one per HTTP request for GraphQL resolvers (shared by all of them, each call judged by its own
 * result), one per message for microservice handlers (settled by the interceptor when the handler's
 * reply has been sent or it finished).
 */
@Injectable()
export class HandlerScopes {
  constructor(
    @Inject(ScopeOpener) private readonly opener: ScopeOpener,
    @Inject(Dispatcher) private readonly dispatcher: Dispatcher,
    @Inject(RequestTracker) private readonly tracker: RequestTracker,
    @Optional() @Inject(Correlator) private readonly correlator?: Correlator,
  ) {
    handlerScopesOf.set(opener, this);
  }

  /**
   * The scope of one resolver call (`args`: root, args, context, info): a {@link ResolverScope} in the
   * request's {@link GraphqlCollector} on a decorated resolver served over HTTP, else the direct scope.
   */
  resolver(args: readonly unknown[], handler: object, cls: object): DeferredScope {
    const info = args[3] as { path?: { key: string | number; prev?: unknown } } | undefined;
    const opened = callScopeOf(info, handler);
    if (opened !== undefined) return opened;
    const settings = this.opener.settings(handler, cls);
    if (settings === null || this.dispatcher.inline) return this.opener.direct;
    const context = args[2] as Record<string, unknown> | undefined;
    const response = responseOf(context);
    if (response === undefined) return this.opener.direct; // a subscription: no response to wait for
    if (response === null) throw new DeferredResponseNotFoundError(`${(cls as { name?: string }).name}.${(handler as { name?: string }).name}()`);
    const request = context!.req as object;
    const correlator = this.correlator?.active ? this.correlator : undefined;
    const collector = this.collectorOf(request, response, correlator);
    const scope = new ResolverScope(settings, collector, new ResolverCall(pathKey(info?.path)), collector.correlated, correlator);
    if (info) callScopes.set(info, { handler, scope });
    return scope;
  }

  /** The scope of one message to a decorated handler (`key`: its context), or the direct scope. The caller settles it. */
  message(key: unknown, handler: object, cls: object): DeferredScope {
    const opened = callScopeOf(key, handler);
    if (opened !== undefined) return opened;
    const settings = this.opener.settings(handler, cls);
    if (settings === null || this.dispatcher.inline) return this.opener.direct;
    const correlator = this.correlator?.active ? this.correlator : undefined;
    const collector = new RequestCollector(settings, this.dispatcher, this.tracker, correlator?.forCurrent(), correlator);
    if (typeof key === 'object' && key !== null) callScopes.set(key, { handler, scope: collector });
    return collector;
  }

  private collectorOf(request: object, response: RawResponse, correlator: Correlator | undefined): GraphqlCollector {
    const existing = scopeOfRequest(request);
    if (existing instanceof GraphqlCollector) return existing;
    const route = { when: this.dispatcher.options.when, sinks: {} };
    const correlated = correlator?.forRequest(request);
    const collector = new GraphqlCollector(route, this.dispatcher, this.tracker, correlated, correlator);
    rememberScope(request, GRAPHQL_REQUEST, collector);
    if (response.closed) collector.settle(response.writableFinished, response.statusCode);
    else response.on('close', () => collector.settle(response.writableFinished, response.statusCode));
    return collector;
  }
}

/**
 * What `@Deferred()` gives a GraphQL resolver or a microservice handler: the scope the interceptor
 * opened for this call, else — a field resolver, whose interceptors Nest runs only with
 * `fieldResolverEnhancers: ['interceptors']`, or an undecorated handler — the scope opened here (a
 * resolver call that cannot be marked failed, or the direct scope). The application is found through
 * the request (GraphQL over HTTP), else it is the only one running.
 */
export function scopeOutsideHttp(type: 'graphql' | 'rpc', args: readonly unknown[], handler: object, cls: object): DeferredScope | undefined {
  if (type === 'graphql') {
    const opened = callScopeOf(args[3], handler);
    if (opened !== undefined) return opened;
    const request = (args[2] as { req?: object } | undefined)?.req;
    const opener = (request ? findOpener(request) : undefined) ?? findOpener(undefined);
    return opener ? (handlerScopesOf.get(opener)?.resolver(args, handler, cls) ?? opener.direct) : undefined;
  }
  // A decorated message handler always has the interceptor (bound by @AfterResponse()): this one is not decorated.
  return callScopeOf(args[1] ?? args[0], handler) ?? findOpener(undefined)?.direct;
}
