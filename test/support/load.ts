import type { DeferredStats, DeferredWork } from 'nestjs-deferred-work';

export const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** GETs every path with `concurrency` requests at a time; resolves with the statuses (0 for a network error). */
export async function load(
  url: string,
  paths: string[],
  concurrency: number,
  onResponse?: (done: number) => void,
): Promise<number[]> {
  const statuses: number[] = new Array(paths.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < paths.length) {
      const i = next++;
      try {
        const res = await fetch(url + paths[i]);
        await res.arrayBuffer();
        statuses[i] = res.status;
      } catch {
        statuses[i] = 0;
      }
      onResponse?.(++done);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}

/** The accounting identity, for the totals and the named sink. */
export function identityHolds(stats: DeferredStats, sink: string): boolean {
  const s = stats.sinks[sink];
  return (
    stats.accepted === stats.delivered + stats.pending + stats.dropped + stats.deadLettered &&
    s.accepted === s.delivered + s.pending + s.dropped + s.deadLettered
  );
}

/** Checks the identity every few ms while `during` runs; resolves with the checks that failed. */
export async function watchIdentity(
  work: DeferredWork,
  during: Promise<unknown>,
  sink: string,
): Promise<{ checks: number; broken: DeferredStats[] }> {
  const broken: DeferredStats[] = [];
  let checks = 0;
  const timer = setInterval(() => {
    checks++;
    const stats = work.stats();
    if (!identityHolds(stats, sink)) broken.push(stats);
  }, 2);
  try {
    await during;
  } finally {
    clearInterval(timer);
  }
  return { checks, broken };
}
