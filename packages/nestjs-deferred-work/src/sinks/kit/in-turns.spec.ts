import { inTurns } from './in-turns';

describe('inTurns', () => {
  it('starts the pieces in order, a turn of the event loop apart, never more than inFlight at once', async () => {
    const started: number[] = [];
    const finish: Array<() => void> = [];
    let running = 0;
    let most = 0;
    const done = inTurns(5, 2, (piece) => {
      started.push(piece);
      most = Math.max(most, ++running);
      return new Promise<void>((resolve) => finish.push(() => (running--, resolve())));
    });
    expect(started).toEqual([0]); // only the first piece starts at once
    await Promise.resolve();
    expect(started).toEqual([0]); // the second waits for a turn of the event loop, not a microtask
    while (started.length < 5 || finish.length > 0) {
      await new Promise((resolve) => setImmediate(resolve));
      finish.shift()?.();
    }
    await done;
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBeLessThanOrEqual(2);
  });

  it('one piece is sent at once, without waiting a turn', async () => {
    const started: number[] = [];
    const done = inTurns(1, 2, async (piece) => void started.push(piece));
    expect(started).toEqual([0]);
    await done;
  });
});
