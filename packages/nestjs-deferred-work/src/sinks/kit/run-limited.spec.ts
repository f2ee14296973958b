import { runLimited } from './run-limited';

describe('runLimited', () => {
  it('never runs more than the limit at once and keeps every outcome in its place', async () => {
    let running = 0;
    let most = 0;
    const outcomes = await runLimited([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5 + (n % 3)));
      running--;
      if (n === 4) throw new Error('four');
      return n * 10;
    });
    expect(most).toBe(3);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.status))).toEqual([10, 20, 30, 'rejected', 50, 60, 70]);
  });

  it('starts nothing more once the signal aborts; what never started says so', async () => {
    const controller = new AbortController();
    const started: number[] = [];
    const outcomes = await runLimited(
      [1, 2, 3, 4],
      1,
      async (n) => {
        started.push(n);
        if (n === 2) controller.abort(new Error('timed out'));
        return n;
      },
      controller.signal,
    );
    expect(started).toEqual([1, 2]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'not-started', 'not-started']);
    expect((outcomes[2] as { reason: Error }).reason.message).toBe('timed out');
  });
});
