/** Per-route counters the runner reads through `/__bench/stats` (plain objects: no cost worth measuring). */
export const handled: Record<string, number> = Object.create(null) as Record<string, number>;
/** Blocking side-effects that completed, per route (items). */
export const blockingDone: Record<string, number> = Object.create(null) as Record<string, number>;
/** Blocking handlers still awaiting their side-effect (a client may have gone away meanwhile). */
export const blockingInFlight = { count: 0 };

export function countHandled(route: string): void {
  handled[route] = (handled[route] ?? 0) + 1;
}

/** Runs a blocking side-effect, counting what it delivered and while it is in flight. */
export async function runBlocking(route: string, effect: () => Promise<number>): Promise<void> {
  blockingInFlight.count++;
  try {
    const items = await effect();
    blockingDone[route] = (blockingDone[route] ?? 0) + items;
  } finally {
    blockingInFlight.count--;
  }
}
