import * as http from 'node:http';
import * as https from 'node:https';
import type { SinkKind } from '../../core/items/deferred-item.interface';
import { SINK_KINDS, isSinkKind } from '../../core/items/item-kinds';
import { describeValue } from '../kit/option-checks';
import { SinkConfigError } from '../kit/sink-config.error';
import { HTTP_SINK_DEFAULTS, checkUrl } from './http-sink.config';
import type { HttpSinkOptions } from './http-sink.options';
import { displayUrl } from './http-wire';

/** Where the items of a kind are posted. */
export interface Route {
  url: URL;
  /** Protocol, host and path: safe to show (no credentials, no query). */
  display: string;
  agent: http.Agent;
  request: typeof http.request;
}

/**
 * The route of each kind of item, from `url` and `urls` (checked; the same URL shares one route), and
 * the keep-alive agents they use, one per protocol. `prefix` starts the messages of a mistake.
 */
export function buildRoutes(prefix: string, options: HttpSinkOptions): { routes: Readonly<Record<SinkKind, Route>>; agents: http.Agent[] } {
  const agents: http.Agent[] = [];
  const agentOptions = { ...HTTP_SINK_DEFAULTS.agentOptions, ...(options.agentOptions ?? {}) };
  const agentFor: Partial<Record<'http:' | 'https:', http.Agent>> = {};
  const byHref = new Map<string, Route>();
  const makeRoute = (option: string, value: string | URL): Route => {
    const url = checkUrl(prefix, option, value);
    const existing = byHref.get(url.href);
    if (existing) return existing;
    const protocol = url.protocol as 'http:' | 'https:';
    let agent = agentFor[protocol];
    if (!agent) {
      agent = protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
      agentFor[protocol] = agent;
      agents.push(agent);
    }
    const route: Route = {
      url,
      display: displayUrl(url),
      agent,
      request: protocol === 'https:' ? https.request : http.request,
    };
    byHref.set(url.href, route);
    return route;
  };

  const urls = options.urls ?? {};
  if (urls === null || typeof urls !== 'object') {
    throw new SinkConfigError(`${prefix}: option "urls" must be an object such as { log: 'https://…', metric: 'https://…' }, got ${describeValue(urls)}.`);
  }
  for (const key of Object.keys(urls)) {
    if (!isSinkKind(key)) {
      throw new SinkConfigError(`${prefix}: option "urls.${key}": "${key}" is not a kind of item. Use "job", "log" or "metric" (others go to "url").`);
    }
  }
  const fallback = options.url === undefined ? undefined : makeRoute('url', options.url);
  const routes = {} as Record<SinkKind, Route>;
  for (const kind of SINK_KINDS) {
    const perKind = urls[kind];
    if (perKind !== undefined) routes[kind] = makeRoute(`urls.${kind}`, perKind);
    else if (fallback) routes[kind] = fallback;
    else {
      throw new SinkConfigError(`${prefix}: no URL for kind "${kind}". Pass "url" (the endpoint for every kind without its own) or "urls.${kind}".`);
    }
  }
  return { routes, agents };
}
