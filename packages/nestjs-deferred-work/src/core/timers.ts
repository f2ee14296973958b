/** Largest delay a Node.js timer takes (2^31 - 1 ms); longer ones fire after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** `ms` when it is a usable timeout (finite, >= 0; capped at the longest timer), else `fallback`. */
export function timeoutOr(ms: number | undefined, fallback: number): number {
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_TIMER_MS) : fallback;
}
