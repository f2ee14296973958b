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
});
