/** How one task of {@link runLimited} ended: its result, its error, or never started (the signal aborted first). */
export type LimitedOutcome<R> = { status: 'fulfilled'; value: R } | { status: 'rejected'; reason: unknown } | { status: 'not-started'; reason: unknown };

/**
 * Runs `run` for every task with at most `limit` running at once (a sink's calls within one write:
 * a few pool clients at most, never every part at once), in order. Once `signal` aborts, no more
 * tasks start: those report `not-started` with the signal's reason; the running ones finish (pass the
 * signal to the client so that they stop too). Never rejects: each outcome is in its task's place.
 */
export async function runLimited<T, R>(
  tasks: readonly T[],
  limit: number,
  run: (task: T, index: number) => Promise<R>,
  signal?: AbortSignal,
): Promise<LimitedOutcome<R>[]> {
  const outcomes: LimitedOutcome<R>[] = new Array(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const index = next++;
      if (signal?.aborted) {
        outcomes[index] = { status: 'not-started', reason: signal.reason };
        continue;
      }
      try {
        outcomes[index] = { status: 'fulfilled', value: await run(tasks[index], index) };
      } catch (reason) {
        outcomes[index] = { status: 'rejected', reason };
      }
    }
  };
  const workers = Math.max(1, Math.min(Math.floor(limit) || 1, tasks.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return outcomes;
}
