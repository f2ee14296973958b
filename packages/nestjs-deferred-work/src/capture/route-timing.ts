import type { RouteTimingStats } from '../core/stats.interface';
/** Names of the metrics emitted by the `timing` option. */
export const HANDLER_METRIC = 'http.server.handler_ms';
export const SEND_METRIC = 'http.server.send_ms';


/** Accumulates timings per route; cheap enough to run on every measured request. */
export class RouteTimings {
  private readonly routes = new Map<string, { count: number; handler: number; send: number; handlerMax: number; sendMax: number }>();

  record(key: string, handlerMs: number, sendMs: number): void {
    let r = this.routes.get(key);
    if (!r) this.routes.set(key, (r = { count: 0, handler: 0, send: 0, handlerMax: 0, sendMax: 0 }));
    r.count++;
    r.handler += handlerMs;
    r.send += sendMs;
    if (handlerMs > r.handlerMax) r.handlerMax = handlerMs;
    if (sendMs > r.sendMax) r.sendMax = sendMs;
  }

  snapshot(): Record<string, RouteTimingStats> {
    const out: Record<string, RouteTimingStats> = {};
    const round = (n: number) => Math.round(n * 1000) / 1000;
    for (const [key, r] of this.routes) {
      out[key] = {
        count: r.count,
        handlerMsAvg: round(r.handler / r.count),
        handlerMsMax: round(r.handlerMax),
        sendMsAvg: round(r.send / r.count),
        sendMsMax: round(r.sendMax),
      };
    }
    return out;
  }
}

/** `/orders/:id` from a controller path and a method path, as Nest joins them. */
export function routeTemplate(controllerPath: unknown, handlerPath: unknown): string {
  const first = (p: unknown) => (Array.isArray(p) ? p[0] : p);
  const parts = [first(controllerPath), first(handlerPath)]
    .filter((p): p is string => typeof p === 'string')
    .map((p) => p.replace(/^\/+|\/+$/g, ''))
    .filter((p) => p !== '');
  return `/${parts.join('/')}`;
}
