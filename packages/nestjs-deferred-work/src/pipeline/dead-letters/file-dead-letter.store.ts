import type { DeadLetterRecord } from '../../core/dead-letter-store.interface';
import { Spool, SpoolFullError } from '../../spool';
import { DeadLetterIndex, type DeadLetterBounds } from './dead-letter-index';
import { serializeRecord } from './dead-letter-record';
import { IndexedDeadLetterStore } from './indexed-dead-letter.store';

/** Options of {@link FileDeadLetterStore}. */
export interface FileDeadLetterStoreOptions extends DeadLetterBounds {
  /** Its directory (one process per directory, as for a spool). */
  dir: string;
  /** Largest record, in bytes: sets the spool's segment size. */
  maxRecordBytes: number;
  /** How often appended records are fsynced, in ms. Default `200`. */
  syncIntervalMs?: number;
}

/**
 * @internal
 * Dead letters in a spool directory (the spool's checksummed frames, one record per frame; a removed
 * record is acked): they survive kill -9 and restarts, and are read back at bootstrap. The records are
 * also held in memory (the index) for listing; bounded by count, bytes and age, the oldest first.
 */
export class FileDeadLetterStore extends IndexedDeadLetterStore {
  readonly description: string;
  private spool: Spool | undefined;
  protected readonly index: DeadLetterIndex;
  /** Records the spool refused (full disk), kept in memory only. */
  refused = 0;

  constructor(private readonly options: FileDeadLetterStoreOptions) {
    super();
    this.description = `file (${options.dir})`;
    this.index = new DeadLetterIndex(options, (seq) => {
      if (seq !== undefined && this.spool) this.spool.ack(seq);
    });
  }

  /** Opens the spool (taking its lock) and reads back what a previous process left. */
  open(): void {
    if (this.spool) return;
    const segmentBytes = Math.max(4 * 1024 * 1024, this.options.maxRecordBytes + 64 * 1024);
    this.spool = Spool.open(this.options.dir, {
      segmentBytes,
      // Room for the records kept, plus acked ones whose segment is not deleted yet.
      maxBytes: this.options.maxBytes + 2 * segmentBytes,
      syncIntervalMs: this.options.syncIntervalMs ?? 200,
    });
    const stale: number[] = [];
    for (const { seq, payload } of this.spool.replay()) {
      let record: DeadLetterRecord;
      try {
        record = JSON.parse(payload.toString('utf8')) as DeadLetterRecord;
      } catch {
        stale.push(seq);
        continue;
      }
      this.index.put(record, payload.length, seq);
    }
    if (stale.length > 0) this.spool.ack(stale);
  }

  add(records: DeadLetterRecord[]): void {
    const spool = this.spool;
    if (!spool) throw new Error(`the dead-letter store in ${this.options.dir} is not open`);
    for (const record of records) {
      const json = serializeRecord(record);
      const bytes = Buffer.byteLength(json, 'utf8');
      this.index.put(record, bytes, this.append(spool, json));
    }
    // Written now, not at the end of the turn: the sink's spool has already acked these items.
    spool.writeNow();
  }

  /** Appends a record; when the spool is full, drops the oldest records to make room. `undefined`: kept in memory only. */
  private append(spool: Spool, json: string): number | undefined {
    for (;;) {
      try {
        return spool.append(json);
      } catch (error) {
        if (!(error instanceof SpoolFullError) || error.reason !== 'max-bytes' || !this.index.evictOldest()) {
          this.refused++;
          if (error instanceof SpoolFullError || error instanceof RangeError) return undefined;
          throw error;
        }
      }
    }
  }

  /** Waits until what was added and removed so far is fsynced. */
  synced(): Promise<void> {
    return this.spool?.synced() ?? Promise.resolve();
  }

  async close(): Promise<void> {
    const spool = this.spool;
    this.spool = undefined;
    await spool?.close();
  }
}
