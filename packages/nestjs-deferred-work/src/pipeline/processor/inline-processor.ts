import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { Entry } from './entry';
import { WritingProcessor } from './writing-processor';

/**
 * Inline mode (testing, see `nestjs-deferred-work/testing`): each item is written at once, in the
 * caller's turn, by itself — no queue, no linger, no one-write-in-flight rule; one try, then
 * dead-letter. Counted like any other item.
 */
export class InlineProcessor extends WritingProcessor {
  private readonly writing = new Set<Entry>();
  private stopped = false;

  get pending(): number {
    return this.writing.size;
  }

  protected get queueDepth(): number {
    return 0;
  }

  protected get inFlight(): number {
    return this.writing.size;
  }

  enqueue(item: DeferredItem): boolean {
    const entry = this.accept(item);
    if (!entry) return false;
    this.writing.add(entry);
    const release = () => void this.writing.delete(entry);
    void this.writeEntries([entry], 1, true, release).catch((error: unknown) => {
      if (!this.writing.delete(entry)) return;
      this.failInternally([entry], error);
    });
    return true;
  }

  async flush(deadline: number): Promise<boolean> {
    const target = this.seq;
    while ([...this.writing].some((entry) => entry.seq <= target)) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await this.waitForProgress(left);
    }
    return true;
  }

  async shutdown(deadline: number): Promise<number> {
    if (this.stopped) return 0;
    this.stopped = true;
    await this.flush(deadline);
    const before = this.counters.deadLettered;
    if (this.writing.size > 0) {
      this.hardStop.abort(new Error('shutdown deadline reached'));
      while (this.writing.size > 0) await this.waitForProgress(1000);
    }
    this.closedForGood = true;
    return this.counters.deadLettered - before;
  }
}
