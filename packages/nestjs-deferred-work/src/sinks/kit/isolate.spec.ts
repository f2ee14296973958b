import { isolate } from './isolate';

/** A server that refuses a whole call when it holds a bad entry (atomic, like a multi-row INSERT). */
function atomicServer(bad: Set<number>) {
  const written: number[] = [];
  let calls = 0;
  const send = async (values: number[]) => {
    calls++;
    const refused = values.find((v) => bad.has(v));
    if (refused !== undefined) throw Object.assign(new Error(`row ${refused} violates not-null`), { code: '23502' });
    written.push(...values);
  };
  return { send, written, calls: () => calls };
}

const splitsOnRowErrors = (error: unknown) => (error as { code?: string }).code === '23502';

describe('isolate', () => {
  it('halves a refused call until each bad entry is alone: only they fail, the rest are written once', async () => {
    const server = atomicServer(new Set([13, 77]));
    const values = Array.from({ length: 100 }, (_, i) => i);
    const outcomes = await isolate(values, server.send, { signal: new AbortController().signal, splits: splitsOnRowErrors });
    const failed = outcomes.flatMap((o, i) => (o === undefined ? [] : [i]));
    expect(failed).toEqual([13, 77]);
    expect(String(outcomes[13])).toMatch(/row 13 violates not-null/);
    expect([...server.written].sort((a, b) => a - b)).toEqual(values.filter((v) => v !== 13 && v !== 77));
    expect(server.calls()).toBeLessThan(30); // about 2 log2(100) calls, not 100
  });

  it('fails a whole call as it is when the error is not one entry’s (a lost connection)', async () => {
    const lost = Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
    let calls = 0;
    const send = () => (calls++, Promise.reject(lost));
    const outcomes = await isolate([1, 2, 3], send, { signal: new AbortController().signal, splits: splitsOnRowErrors });
    expect(outcomes).toEqual([lost, lost, lost]);
    expect(calls).toBe(1);
  });

  it('splits into singles, sent a few at a time', async () => {
    const server = atomicServer(new Set([2]));
    const outcomes = await isolate([0, 1, 2, 3], server.send, { signal: new AbortController().signal, splits: () => true, split: 'singles', concurrency: 2 });
    expect(outcomes.map((o) => o === undefined)).toEqual([true, true, false, true]);
    expect(server.calls()).toBe(5);
  });

  it('sends nothing more once the signal aborts: the entries not yet written fail with its reason', async () => {
    const controller = new AbortController();
    const reason = new Error('write timed out');
    const server = atomicServer(new Set([0]));
    const send = async (values: number[]) => {
      if (values.length === 2) controller.abort(reason); // the signal aborts during the second round
      return server.send(values);
    };
    const outcomes = await isolate([0, 1, 2, 3], send, { signal: controller.signal, splits: splitsOnRowErrors });
    expect(outcomes[0]).toBe(reason); // its call was cut by the abort
    expect(outcomes.slice(2)).toEqual([reason, reason]); // never sent
  });
});
