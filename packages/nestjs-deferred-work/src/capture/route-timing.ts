import type { RouteTimingStats } from '../core/stats.interface';
/** Names of the metrics emitted by the `timing` option. */
export const HANDLER_METRIC = 'http.server.handler_ms';
export const SEND_METRIC = 'http.server.send_ms';

/** Times below 2^-7 ms (7.8 µs) fall in the first bucket, times from 2^20 ms (17.5 minutes) on in the last. */
const MIN_EXP = -7;
const MAX_EXP = 20;
/** Buckets per doubling: [1, 1.25), [1.25, 1.5), [1.5, 1.75), [1.75, 2) times a power of two (a quantile within ±12.5%). */
const PER_OCTAVE = 4;
const BUCKETS = 1 + (MAX_EXP - MIN_EXP) * PER_OCTAVE + 1;
const MIN_MS = 2 ** MIN_EXP;
const MAX_MS = 2 ** MAX_EXP;

/** A time's bits: its exponent and the two leading bits of its mantissa are its bucket, without a logarithm or a branch per bound. */
const float = new Float64Array(1);
const words = new Uint32Array(float.buffer);
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** The bucket of a time in ms. */
function bucketOf(ms: number): number {
  if (!(ms >= MIN_MS)) return 0;
  if (ms >= MAX_MS) return BUCKETS - 1;
  float[0] = ms;
  const high = words[HIGH]!;
  return 1 + ((high >>> 20) - 1023 - MIN_EXP) * PER_OCTAVE + ((high >>> 18) & 3);
}

/** The `q` quantile of a histogram of `count` times: its bucket's middle, within the largest time seen. */
function quantile(buckets: Uint32Array, count: number, q: number, max: number): number {
  const rank = Math.max(1, Math.ceil(q * count));
  let seen = 0;
  for (let i = 0; i < BUCKETS; i++) {
    seen += buckets[i]!;
    if (seen < rank) continue;
    if (i === 0) return Math.min(MIN_MS, max);
    if (i === BUCKETS - 1) return max;
    const octave = 2 ** (MIN_EXP + Math.floor((i - 1) / PER_OCTAVE));
    const middle = octave * (1 + (((i - 1) % PER_OCTAVE) + 0.5) / PER_OCTAVE);
    return Math.min(middle, max);
  }
  return max;
}

/** One route's sums and histograms: fixed size, allocated once per route. */
interface RouteSums {
  count: number;
  handler: number;
  send: number;
  handlerMax: number;
  sendMax: number;
  items: number;
  itemsMax: number;
  handlerBuckets: Uint32Array;
  sendBuckets: Uint32Array;
}

/**
 * Accumulates timings per route; cheap enough to run on every measured request: sums, maxima and two
 * fixed histograms of 110 counters per route (no allocation per request), from which the p50 and p95
 * are read when `stats()` is called.
 */
export class RouteTimings {
  private readonly routes = new Map<string, RouteSums>();

  /** One measured request: its handler and send times in ms, and the items it deferred before its response finished. */
  record(key: string, handlerMs: number, sendMs: number, items = 0): void {
    let r = this.routes.get(key);
    if (!r) {
      r = { count: 0, handler: 0, send: 0, handlerMax: 0, sendMax: 0, items: 0, itemsMax: 0, handlerBuckets: new Uint32Array(BUCKETS), sendBuckets: new Uint32Array(BUCKETS) };
      this.routes.set(key, r);
    }
    r.count++;
    r.handler += handlerMs;
    r.send += sendMs;
    r.items += items;
    if (handlerMs > r.handlerMax) r.handlerMax = handlerMs;
    if (sendMs > r.sendMax) r.sendMax = sendMs;
    if (items > r.itemsMax) r.itemsMax = items;
    r.handlerBuckets[bucketOf(handlerMs)]!++;
    r.sendBuckets[bucketOf(sendMs)]!++;
  }

  snapshot(): Record<string, RouteTimingStats> {
    const out: Record<string, RouteTimingStats> = {};
    const round = (n: number) => Math.round(n * 1000) / 1000;
    for (const [key, r] of this.routes) {
      out[key] = {
        count: r.count,
        handlerMsAvg: round(r.handler / r.count),
        handlerMsP50: round(quantile(r.handlerBuckets, r.count, 0.5, r.handlerMax)),
        handlerMsP95: round(quantile(r.handlerBuckets, r.count, 0.95, r.handlerMax)),
        handlerMsMax: round(r.handlerMax),
        sendMsAvg: round(r.send / r.count),
        sendMsP50: round(quantile(r.sendBuckets, r.count, 0.5, r.sendMax)),
        sendMsP95: round(quantile(r.sendBuckets, r.count, 0.95, r.sendMax)),
        sendMsMax: round(r.sendMax),
        itemsAvg: round(r.items / r.count),
        itemsMax: r.itemsMax,
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
