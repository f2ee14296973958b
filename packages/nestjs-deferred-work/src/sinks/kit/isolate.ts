import { runLimited } from './run-limited';

/** Options of {@link isolate}. */
export interface IsolateOptions<V = unknown> {
  /** The write's signal: once it aborts, nothing more is sent (the rest fail with its reason). */
  signal: AbortSignal;
  /**
   * Whether an error of a call of several entries may have been caused by one of them alone (a
   * NOT NULL violation in a multi-row INSERT, a pipeline refused part-way): then the call is split
   * and sent again to find that entry. Any other error (a connection lost) fails every entry of the
   * call as it is.
   */
  splits(error: unknown): boolean | Promise<boolean>;
  /** How to split a failed call: in `halves` (log2 n rounds, one call at a time: a database) or into `singles` (one round, in parallel: a Redis pipeline). Default `halves`. */
  split?: 'halves' | 'singles';
  /** With `singles`, how many single sends run at once. Default `16`. */
  concurrency?: number;
  /** How one entry is sent alone after a split, when the server has a call of its own for it (BullMQ `add`). Default: `send([value])`. */
  sendOne?(value: V): Promise<unknown>;
}

/**
 * Sends `values` in one call and, if the server refuses the whole call because of one bad entry,
 * isolates it within the same write: the call is split (in halves, or into single entries) and sent
 * again until each bad entry is alone. Resolves with one outcome per value, in order: `undefined`
 * when it went through, else its error — so only the bad entries are dead-lettered and the rest are
 * written once. `send` must be atomic (nothing applied when it throws) or idempotent (a resend of an
 * entry already applied is skipped, e.g. by the item id).
 */
export async function isolate<V>(values: readonly V[], send: (values: V[]) => Promise<unknown>, options: IsolateOptions<V>): Promise<unknown[]> {
  const { signal } = options;
  const outcomes: unknown[] = new Array(values.length).fill(undefined);
  const settled: boolean[] = new Array(values.length).fill(false);
  const settle = (positions: number[], error?: unknown) => {
    for (const p of positions) {
      settled[p] = true;
      outcomes[p] = error;
    }
  };
  let split = false;
  const attempt = async (positions: number[]): Promise<void> => {
    if (signal.aborted) return; // not sent: failed with the signal's reason below
    try {
      if (split && positions.length === 1 && options.sendOne) await options.sendOne(values[positions[0]]);
      else await send(positions.map((p) => values[p]));
      return settle(positions);
    } catch (error) {
      if (positions.length === 1 || signal.aborted || !(await options.splits(error))) return settle(positions, (signal.aborted ? signal.reason : error) ?? new Error('failed'));
    }
    split = true;
    if (options.split === 'singles') {
      await runLimited(positions, options.concurrency ?? 16, (p) => attempt([p]), signal);
      return;
    }
    const half = Math.ceil(positions.length / 2);
    await attempt(positions.slice(0, half));
    await attempt(positions.slice(half));
  };
  await attempt(values.map((_, p) => p));
  for (let p = 0; p < values.length; p++) if (!settled[p]) outcomes[p] = signal.reason ?? new Error('not sent');
  return outcomes;
}
