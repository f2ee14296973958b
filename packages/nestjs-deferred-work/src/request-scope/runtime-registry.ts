import type { ScopeOpener } from './scope-opener';

/** Property of the HTTP framework instance (Express app, Fastify instance) that holds its opener. */
const OPENER = Symbol.for('nestjs-deferred-work.opener');

/** Openers of the applications alive in this process, for requests whose framework instance is unknown. */
const live = new Set<ScopeOpener>();

/** Called at bootstrap with the app's HTTP framework instance (`httpAdapter.getInstance()`), if any. */
export function registerOpener(opener: ScopeOpener, frameworkInstance: object | undefined): void {
  live.add(opener);
  if (frameworkInstance) (frameworkInstance as Record<symbol, ScopeOpener>)[OPENER] = opener;
}

/** Called at shutdown. */
export function unregisterOpener(opener: ScopeOpener): void {
  live.delete(opener);
}

/**
 * The opener of the application a request belongs to: found through the request's framework
 * instance (Express `req.app`, Fastify `request.server`), else the only live application's.
 */
export function findOpener(request: object | undefined): ScopeOpener | undefined {
  const owner = (request as { app?: object; server?: object } | undefined)?.app ?? (request as { server?: object } | undefined)?.server;
  const found = owner ? (owner as Record<symbol, ScopeOpener | undefined>)[OPENER] : undefined;
  if (found) return found;
  if (live.size === 1) return live.values().next().value;
  return undefined;
}
