import { IncomingMessage } from 'node:http';
import type { ScopeOpener } from './scope-opener';

/** Property of the HTTP framework instance (Express app, Fastify instance) that holds its opener. */
const OPENER = Symbol.for('nestjs-deferred-work.opener');

/** Openers of the applications alive in this process. */
const live = new Set<ScopeOpener>();

/**
 * The opener already registered on a framework instance by another live application, if any
 * (two Nest applications sharing one Express app or Fastify instance).
 */
export function openerOn(frameworkInstance: object | undefined): ScopeOpener | undefined {
  const found = frameworkInstance ? (frameworkInstance as Record<symbol, ScopeOpener | undefined>)[OPENER] : undefined;
  return found && live.has(found) ? found : undefined;
}

/** Called at bootstrap with the app's HTTP framework instance (`httpAdapter.getInstance()`), if any. */
export function registerOpener(opener: ScopeOpener, frameworkInstance: object | undefined): void {
  live.add(opener);
  if (frameworkInstance) (frameworkInstance as Record<symbol, ScopeOpener>)[OPENER] = opener;
}

/** Called at shutdown. */
export function unregisterOpener(opener: ScopeOpener, frameworkInstance: object | undefined): void {
  live.delete(opener);
  const holder = frameworkInstance as Record<symbol, ScopeOpener | undefined> | undefined;
  if (holder && holder[OPENER] === opener) delete holder[OPENER];
}

/**
 * The opener of the application a request belongs to, found through the request's framework instance
 * (Express `req.app`, Fastify `request.server`). Only a request with neither falls back to the single
 * live application, if there is exactly one.
 */
export function findOpener(request: object | undefined): ScopeOpener | undefined {
  if (request instanceof IncomingMessage) {
    // Express sets each request's prototype to its application's `request` object, which holds `app`.
    // Read there, `app` hits V8's cache; read on the request, it misses (see request-scopes.ts): ~1 µs.
    const onPrototype = openerOn((Object.getPrototypeOf(request) as { app?: object } | null)?.app);
    if (onPrototype) return onPrototype;
  }
  const owner = (request as { app?: object } | undefined)?.app ?? (request as { server?: object } | undefined)?.server;
  if (owner) return openerOn(owner);
  return live.size === 1 ? live.values().next().value : undefined;
}
