import type { DeferredSink, SinkItem, SinkWriteContext } from 'nestjs-deferred-work';

/** A sink for tests: records each write's time and items, and can be made to block or fail. */
export class RecordingSink implements DeferredSink<SinkItem> {
  readonly writes: Array<{ at: number; items: SinkItem[] }> = [];
  /** Set to make the next writes wait for it. */
  gate: Promise<void> | undefined;
  /** Set to make writes fail this way. */
  behaviour: 'ok' | 'throw' | 'reject' | 'hang' = 'ok';

  constructor(readonly name = 'recording') {}

  get items(): SinkItem[] {
    return this.writes.flatMap((w) => w.items);
  }

  write(batch: readonly SinkItem[], _context: SinkWriteContext): Promise<void> {
    this.writes.push({ at: performance.now(), items: [...batch] });
    if (this.behaviour === 'throw') throw new Error('sink threw synchronously');
    if (this.behaviour === 'reject') return Promise.reject(new Error('sink rejected'));
    if (this.behaviour === 'hang') return new Promise(() => undefined);
    return this.gate ?? Promise.resolve();
  }
}
