import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { guardedWrite } from './guarded-write';
import { HardStop } from './hard-stop';

const items = [{ kind: 'log', level: 'info', message: 'a', when: 'always', createdAt: 0 }] as unknown as DeferredItem[];

/** A sink whose write waits until its signal aborts, then settles — a few microtasks later — with what it had confirmed. */
function partialOnAbort(result: SinkWriteResult): DeferredSink {
  return {
    name: 'partial',
    write: (_batch: readonly unknown[], { signal }: SinkWriteContext) =>
      new Promise<SinkWriteResult>((resolve) => {
        signal.addEventListener('abort', () => {
          void Promise.resolve()
            .then(() => undefined)
            .then(() => undefined)
            .then(() => resolve(result));
        });
      }),
  } as unknown as DeferredSink;
}

describe('guardedWrite', () => {
  it("at the shutdown deadline, a write that settles with its partial result in the same turn keeps it (what it confirmed stays delivered)", async () => {
    const partial: SinkWriteResult = { failed: [{ index: 0, error: new Error('cut short'), retryable: true }] };
    const hardStop = new HardStop();
    const written = guardedWrite(partialOnAbort(partial), items, 1, 60_000, hardStop);
    await new Promise((resolve) => setImmediate(resolve));
    hardStop.abort(new Error('shutdown deadline reached'));
    await expect(written).resolves.toBe(partial);
  });

  it('at the shutdown deadline, a write that does not settle this turn is given up on with the deadline', async () => {
    const hardStop = new HardStop();
    const never = { name: 'never', write: () => new Promise(() => undefined) } as unknown as DeferredSink;
    const written = guardedWrite(never, items, 1, 60_000, hardStop);
    hardStop.abort(new Error('shutdown deadline reached'));
    await expect(written).rejects.toThrow('shutdown deadline reached');
  });
  it('times out a write that never reads its signal, and a signal read after the timeout is already aborted with it', async () => {
    const hardStop = new HardStop();
    let context: SinkWriteContext | undefined;
    const ignoring = { name: 'ignoring', write: (_batch: unknown, c: SinkWriteContext) => ((context = c), new Promise(() => undefined)) } as unknown as DeferredSink;
    await expect(guardedWrite(ignoring, items, 1, 20, hardStop)).rejects.toThrow('write timed out after 20 ms');
    expect(context!.signal.aborted).toBe(true);
    expect(String(context!.signal.reason)).toContain('write timed out after 20 ms');
    expect(context!.attempt).toBe(1);
  });

  it('aborts a signal the sink read before the timeout, once, with the timeout', async () => {
    const hardStop = new HardStop();
    const reasons: unknown[] = [];
    const reading = {
      name: 'reading',
      write: (_batch: unknown, { signal }: SinkWriteContext) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => (reasons.push(signal.reason), reject(signal.reason)))),
    } as unknown as DeferredSink;
    const written = guardedWrite(reading, items, 2, 20, hardStop);
    await expect(written).rejects.toThrow('write timed out after 20 ms');
    hardStop.abort(new Error('shutdown deadline reached')); // after the write ended: nothing more
    expect(reasons).toHaveLength(1);
    expect(String(reasons[0])).toContain('write timed out after 20 ms');
  });
});
