import { IncomingMessage } from 'node:http';
import type { DeferredScope } from './deferred-scope.interface';

/** A request's scope and the handler it was opened for. */
interface OpenedScope {
  handler: object;
  scope: DeferredScope;
}

/** Property of a Fastify request (any request object that is not a Node `IncomingMessage`) that holds its scope. */
const OPENED = Symbol.for('nestjs-deferred-work.scope');

/**
 * Scopes of Node `IncomingMessage` requests (Express's `req`), kept off the request. On Express nearly
 * every request and response object has a hidden class of its own (measured in the benchmark server:
 * no two consecutive requests shared one), so each property added to or read from them misses V8's
 * inline caches and goes through the runtime: about 2 µs per symbol property added, and the two the
 * scope needed cost more than this map's one entry. A Fastify request keeps a stable hidden class,
 * where the property is the cheaper of the two. Held weakly: a scope is looked up for as long as its
 * request is (`forRequest(req)` after the client left still judges items by the request's outcome).
 * The map lives on `globalThis` under a registered symbol, so that the ESM and CommonJS builds of this
 * package loaded side by side see one another's scopes, as they do the property's.
 */
const scopes: WeakMap<object, OpenedScope> = ((globalThis as Record<symbol, WeakMap<object, OpenedScope> | undefined>)[
  Symbol.for('nestjs-deferred-work.request-scopes')
] ??= new WeakMap());

function openedOn(request: object): OpenedScope | undefined {
  return request instanceof IncomingMessage ? scopes.get(request) : (request as Record<symbol, OpenedScope | undefined>)[OPENED];
}

/** The request's scope if it was opened for `handler` (a request that fell through to another handler has none yet). */
export function scopeOpenedFor(request: object, handler: object): DeferredScope | undefined {
  const opened = openedOn(request);
  return opened !== undefined && opened.handler === handler ? opened.scope : undefined;
}

/** The request's scope, whichever handler it was opened for. */
export function scopeOfRequest(request: object): DeferredScope | undefined {
  return openedOn(request)?.scope;
}

/** Records the scope opened for `handler` on this request (replacing one opened for another handler). */
export function rememberScope(request: object, handler: object, scope: DeferredScope): void {
  const opened: OpenedScope = { handler, scope };
  if (request instanceof IncomingMessage) scopes.set(request, opened);
  else (request as Record<symbol, OpenedScope>)[OPENED] = opened;
}
