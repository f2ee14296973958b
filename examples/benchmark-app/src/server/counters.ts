/** Per-route counters the runner reads through `/__bench/stats` (plain objects: no cost worth measuring). */
export const handled: Record<string, number> = Object.create(null) as Record<string, number>;
/** Items of awaited side-effects (blocking, article-tap, event-emitter) that completed, per route. */
export const effectsDone: Record<string, number> = Object.create(null) as Record<string, number>;
/** Awaited side-effects still running, per route (a client may have gone away meanwhile). */
export const effectsInFlight: Record<string, number> = Object.create(null) as Record<string, number>;
/** Unhandled promise rejections the process has seen (see `main.ts`). */
export const unhandled = { rejections: 0 };

export function countHandled(route: string): void {
  handled[route] = (handled[route] ?? 0) + 1;
}

/** Awaited side-effects still running, over every route. */
/**
 * Handlers still running that await something before their side-effect (the realistic routes' query):
 * a stats snapshot waits for them too, or a request it counted would defer its items after it.
 */
let handlersInFlight = 0;

/** Runs a handler's body, counted in {@link totalInFlight} until it settles. */
export async function inHandler<T>(body: () => Promise<T>): Promise<T> {
  handlersInFlight++;
  try {
    return await body();
  } finally {
    handlersInFlight--;
  }
}

export function totalInFlight(): number {
  let total = handlersInFlight;
  for (const route in effectsInFlight) total += effectsInFlight[route];
  return total;
}

/**
 * Runs a side-effect, counting the items it delivered and while it is in flight. A rejection is
 * passed on unchanged: where the caller drops the promise (a `tap(async ...)`), it stays unhandled.
 */
export async function runEffect(route: string, effect: () => Promise<number>): Promise<void> {
  effectsInFlight[route] = (effectsInFlight[route] ?? 0) + 1;
  try {
    const items = await effect();
    effectsDone[route] = (effectsDone[route] ?? 0) + items;
  } finally {
    effectsInFlight[route]--;
  }
}

/** The counter key (and URL path) of a scenario's variant route: `sim5/blocking`. */
export function routeKey(scenario: string, variant: string): string {
  return `${scenario}/${variant}`;
}
