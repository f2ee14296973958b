import { setTimeout as sleep } from 'node:timers/promises';
import type { DeadLetterRecord, DeadLetterStore, RedriveOptions, RedriveResult, RedriveSelector } from '../../core/dead-letter-store.interface';
import { RedriveInProgressError } from '../../core/errors/redrive-in-progress.error';
import type { ProcessorBase } from '../processor/processor-base';
import type { RecordHistory } from './dead-letter-record';

/** Records kept in memory about items being redriven (their first error, redrive count), at most. */
const HISTORY_LIMIT = 10_000;
const PAGE = 1000;

/**
 * @internal
 * Hands dead letters back to their sink: one redrive at a time, at most `perSecond` items a second,
 * each removed from the store as it goes, with the same item (and id). An item dead-lettered again gets
 * a new record that keeps its first error and counts its redrives.
 */
export class Redrive {
  private running: { startedAt: number; done: number; total: number } | undefined;
  /** What a redriven item's next record keeps, by record id (bounded; oldest forgotten first). */
  private readonly history = new Map<string, RecordHistory>();

  constructor(
    private readonly store: DeadLetterStore,
    private readonly processors: ReadonlyMap<string, ProcessorBase>,
    private readonly perSecond: number,
  ) {}

  /** The history of a record id being redriven, taken (once). */
  take(id: string): RecordHistory | undefined {
    const history = this.history.get(id);
    if (history) this.history.delete(id);
    return history;
  }

  async run(selector: RedriveSelector, options: RedriveOptions = {}): Promise<RedriveResult> {
    if (this.running) throw new RedriveInProgressError(this.running.startedAt, this.running.done, this.running.total);
    const state = { startedAt: Date.now(), done: 0, total: 0 };
    this.running = state;
    try {
      const dryRun = options.dryRun === true;
      const skipped: RedriveResult['skipped'] = [];
      const records = await this.select(selector, skipped);
      const ready: DeadLetterRecord[] = [];
      for (const record of records) {
        const why = this.cannot(record);
        if (why) skipped.push({ id: record.id, reason: why });
        else ready.push(record);
      }
      state.total = ready.length;
      const result: RedriveResult = { dryRun, matched: records.length, redriven: dryRun ? ready.length : 0, skipped };
      if (dryRun) return result;
      const perSecond = options.perSecond ?? this.perSecond;
      const gapMs = perSecond > 0 ? 1000 / perSecond : 0;
      let next = Date.now();
      for (const record of ready) {
        const wait = next - Date.now();
        if (wait > 0) await sleep(wait);
        next = Math.max(next, Date.now() - 1000) + gapMs;
        const why = this.cannot(record) ?? (this.processors.get(record.sink)!.hasRoom ? undefined : `sink "${record.sink}" has no room in its queue`);
        if (why) {
          skipped.push({ id: record.id, reason: why });
          continue;
        }
        if ((await this.store.remove([record.id])) === 0) {
          skipped.push({ id: record.id, reason: 'no longer in the store (discarded or redriven meanwhile)' });
          continue;
        }
        this.remember(record);
        this.processors.get(record.sink)!.redrive(record.item);
        result.redriven++;
        state.done++;
      }
      return result;
    } finally {
      this.running = undefined;
    }
  }

  private async select(selector: RedriveSelector, skipped: RedriveResult['skipped']): Promise<DeadLetterRecord[]> {
    if ('ids' in selector) {
      const records: DeadLetterRecord[] = [];
      for (const id of new Set(selector.ids)) {
        const record = await this.store.get(id);
        if (record) records.push(record);
        else skipped.push({ id, reason: 'not found' });
      }
      return records;
    }
    const records: DeadLetterRecord[] = [];
    let after: string | undefined;
    do {
      const page = await this.store.list({ ...selector.filter, limit: PAGE, after });
      records.push(...page.records);
      after = page.next;
    } while (after !== undefined);
    return records;
  }

  /** Why a record cannot be redriven now, if it cannot. */
  private cannot(record: DeadLetterRecord): string | undefined {
    if (record.item.kind === 'callback') return 'a run(fn) callback cannot be redriven (its function is not kept)';
    const processor = this.processors.get(record.sink);
    if (!processor) return `no sink is named "${record.sink}" any more`;
    if (processor.closed) return `sink "${record.sink}" has shut down`;
    return undefined;
  }

  private remember(record: DeadLetterRecord): void {
    if (this.history.size >= HISTORY_LIMIT) this.history.delete(this.history.keys().next().value!);
    this.history.set(record.id, { firstError: record.firstError, firstAt: record.firstAt, redrives: record.redrives + 1 });
  }
}
