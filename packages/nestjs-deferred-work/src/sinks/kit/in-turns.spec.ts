import { inTurns } from './in-turns';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('inTurns', () => {
  it('starts the pieces in order, a turn of the event loop apart, never more than inFlight at once', async () => {
    const started: number[] = [];
    const finish: Array<() => void> = [];
    const done = inTurns(
      5,
      2,
      (piece) => {
        started.push(piece);
        return new Promise<void>((resolve) => finish.push(resolve));
      },
      () => undefined,
    );
    expect(started).toEqual([0]); // only the first piece starts at once
    await Promise.resolve();
    expect(started).toEqual([0]); // the second waits for a turn of the event loop, not a microtask
    for (let k = 0; k < 5; k++) await turn();
    expect(started).toEqual([0, 1]); // two in flight: the third waits for the first to settle
    finish.shift()!();
    for (let k = 0; k < 5; k++) await turn();
    expect(started).toEqual([0, 1, 2]);
    while (started.length < 5 || finish.length > 0) {
      finish.shift()?.();
      await turn();
    }
    await done;
    expect(started).toEqual([0, 1, 2, 3, 4]);
  });

  it('one piece is sent at once, without waiting a turn', async () => {
    const started: number[] = [];
    const done = inTurns(1, 2, async (piece) => void started.push(piece), () => undefined);
    expect(started).toEqual([0]);
    await done;
  });

  it('a piece that throws or rejects is reported to failed(piece, error); the others are still sent, and inTurns resolves', async () => {
    const sent: number[] = [];
    const failures: Array<[number, string]> = [];
    await expect(
      inTurns(
        4,
        2,
        (piece) => {
          if (piece === 1) throw new Error('built badly');
          if (piece === 2) return Promise.reject(new Error('refused'));
          sent.push(piece);
          return Promise.resolve();
        },
        (piece, error) => failures.push([piece, (error as Error).message]),
      ),
    ).resolves.toBeUndefined();
    expect(sent).toEqual([0, 3]);
    expect(failures).toEqual([
      [1, 'built badly'],
      [2, 'refused'],
    ]);
  });
});
