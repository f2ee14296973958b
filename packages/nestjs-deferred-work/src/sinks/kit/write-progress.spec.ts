import { WriteProgress } from './write-progress';

describe('WriteProgress', () => {
  it('a complete write: failures as reported, everything else delivered', () => {
    const progress = new WriteProgress(3);
    progress.confirm([0, 2]);
    progress.fail([1], new Error('refused'), false);
    expect(progress.result(true)).toEqual({ failed: [{ index: 1, error: new Error('refused'), retryable: false }] });
    expect(new WriteProgress(2).result(true)).toBeUndefined();
  });

  it('a write cut short: what was confirmed counts, the rest fail as retryable with the reason', () => {
    const progress = new WriteProgress(4);
    progress.confirm([0]);
    progress.fail([1], new Error('refused'), false);
    const reason = new Error('write timed out');
    expect(progress.result(false, reason)?.failed).toEqual([
      { index: 1, error: new Error('refused'), retryable: false },
      { index: 2, error: reason, retryable: true },
      { index: 3, error: reason, retryable: true },
    ]);
  });

  it('every failure keeps a code: the one given, the one its error carries, ETIMEDOUT for the entries the timeout cut short', () => {
    class WriteTimeoutError extends Error {
      override readonly name = 'WriteTimeoutError';
    }
    const progress = new WriteProgress(5);
    progress.fail([0], Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), true);
    progress.failEntry({ index: 1, error: new Error('Connection terminated unexpectedly') });
    progress.failEntry({ index: 2, error: new Error('refused'), code: '23514', retryable: false });
    progress.fail([3], new Error('no code'), true);
    const failed = progress.result(false, new WriteTimeoutError('write timed out after 5000 ms'))?.failed;
    expect(failed?.map((f) => [f.index, f.code])).toEqual([
      [0, 'ECONNREFUSED'],
      [1, 'ECONNRESET'],
      [2, '23514'],
      [3, undefined],
      [4, 'ETIMEDOUT'],
    ]);
    expect(failed?.[3]).not.toHaveProperty('code');
  });

  it('until() ends with the work, or with the signal (and the work’s late rejection stays handled)', async () => {
    const progress = new WriteProgress(1);
    await expect(progress.until(Promise.resolve(), new AbortController().signal)).resolves.toBe(true);
    const controller = new AbortController();
    let fail!: (e: Error) => void;
    const hanging = new Promise((_, reject) => (fail = reject));
    const cut = progress.until(hanging, controller.signal);
    controller.abort(new Error('timeout'));
    await expect(cut).resolves.toBe(false);
    fail(new Error('late'));
    await new Promise((r) => setImmediate(r));
  });
});
