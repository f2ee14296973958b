import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { Spool } from '../../spool';

/** A record read back from disk, as an item. */
export interface PagedRecord {
  spoolSeq: number;
  item: DeferredItem;
  /** A replayed record that began a write of the previous process: that write's size. */
  batch?: number;
  /** The record's size on disk (the item's JSON), in bytes. */
  bytes: number;
}

/** An entry `requeue` sent to the back: read back after every backlog record below `before` (the records appended before it was sent back). */
export interface ParkedRecord {
  seq: number;
  before: number;
}

/** A backlog record taken by a page-in: its payload, none when its frame no longer checks out. */
interface TakenRecord {
  seq: number;
  payload?: Buffer;
}

/** A record's payload as an item; `undefined` when it is not JSON. */
function parseItem(payload: Buffer): DeferredItem | undefined {
  try {
    return JSON.parse(payload.toString('utf8')) as DeferredItem;
  } catch {
    return undefined;
  }
}

/**
 * The backlog records a page-in of `wanted` takes, in order: the pending records above `cursor`
 * (`onDisk` of them are counted), each parked record merged in after the records below its `before`.
 * Returns them with how many parked ones were taken (from the front of `parked`), the seq of the
 * last record taken from disk (none: `undefined`), and `short`: the records counted on disk but not
 * found there (never expected), for the caller to correct its count. Throws what the disk throws.
 */
export function takeBacklog(
  spool: Pick<Spool, 'readPending'>,
  cursor: number,
  parked: readonly ParkedRecord[],
  onDisk: number,
  wanted: number,
): { taken: TakenRecord[]; parkedTaken: number; lastFromDisk: number | undefined; short: number } {
  const asked = Math.min(wanted, onDisk);
  const read = asked > 0 ? spool.readPending(cursor, asked) : { records: [], missing: [] };
  // Parked records are read one by one (before anything changes), then merged in their place.
  const disk: TakenRecord[] = [...read.records, ...read.missing.map((seq) => ({ seq }))].sort((a, b) => a.seq - b.seq);
  const taken: TakenRecord[] = [];
  let fromDisk = 0;
  let parkedTaken = 0;
  const takeParked = (): void => {
    const { seq } = parked[parkedTaken++]!;
    const found = spool.readPending(seq - 1, 1).records[0];
    taken.push(found?.seq === seq ? found : { seq });
  };
  for (const record of disk) {
    while (taken.length < wanted && parkedTaken < parked.length && parked[parkedTaken]!.before <= record.seq) takeParked();
    if (taken.length >= wanted) break;
    taken.push(record);
    fromDisk++;
  }
  // Fewer pending records on disk than counted (never expected): the count is corrected by the caller.
  const short = fromDisk === disk.length && disk.length < asked ? onDisk - fromDisk : 0;
  if (fromDisk === onDisk || short > 0) while (taken.length < wanted && parkedTaken < parked.length) takeParked();
  return { taken, parkedTaken, lastFromDisk: fromDisk > 0 ? disk[fromDisk - 1]!.seq : undefined, short };
}

/**
 * The taken records as items, each with the size of the write it began in the previous process
 * (taken out of `replayBatches`); `bad` lists the seqs whose record could not be read back as an item.
 */
export function parseRecords(taken: readonly TakenRecord[], replayBatches: Map<number, number>): { records: PagedRecord[]; bad: number[] } {
  const records: PagedRecord[] = [];
  const bad: number[] = [];
  for (const { seq, payload } of taken) {
    const item = payload === undefined ? undefined : parseItem(payload);
    const batch = replayBatches.get(seq);
    if (batch !== undefined) replayBatches.delete(seq);
    if (item === undefined) bad.push(seq);
    else records.push(batch === undefined ? { spoolSeq: seq, item, bytes: payload!.length } : { spoolSeq: seq, item, batch, bytes: payload!.length });
  }
  return { records, bad };
}
