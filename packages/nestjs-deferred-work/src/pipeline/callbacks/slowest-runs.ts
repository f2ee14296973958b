const KEPT = 5;

/** The longest runs seen (ms, longest first, at most five), with when they ended. */
export class SlowestRuns {
  private runs: Array<{ ms: number; at: number }> = [];

  record(ms: number): void {
    const runs = this.runs;
    if (runs.length >= KEPT && ms <= runs[runs.length - 1].ms) return;
    runs.push({ ms: Math.round(ms * 10) / 10, at: Date.now() });
    runs.sort((a, b) => b.ms - a.ms);
    if (runs.length > KEPT) runs.length = KEPT;
  }

  snapshot(): Array<{ ms: number; at: number }> {
    return this.runs.map((run) => ({ ...run }));
  }
}
