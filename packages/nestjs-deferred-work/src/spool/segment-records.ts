const NONE = 0;
const PENDING = 1;
const ACKED = 2;

/**
 * In memory, the records of one segment by seq: whether each is pending or acked, when it was
 * appended, and where its frame lies in the log file. Arrays indexed by `seq - firstSeq`, doubled
 * as they fill.
 */
export class SegmentRecords {
  /** Records not acked. */
  pending = 0;
  /** Highest seq recorded (`firstSeq - 1` when none). */
  lastSeq: number;

  private states = new Uint8Array(256);
  private times = new Float64Array(256);
  /** Byte offset of each record's frame in the log file (what `readPending` reads). */
  private offsets = new Float64Array(256);
  private sizes = new Uint32Array(256);
  /** Index below which no record is pending. */
  private cursor = 0;

  constructor(
    /** The seq of the segment's first record. */
    readonly firstSeq: number,
  ) {
    this.lastSeq = firstSeq - 1;
  }

  /** Whether `seq` falls in this segment's range. */
  holds(seq: number): boolean {
    return seq >= this.firstSeq && seq <= this.lastSeq;
  }

  /** Whether `seq` is a record of this segment not acked yet. */
  isPending(seq: number): boolean {
    return this.holds(seq) && this.states[seq - this.firstSeq] === PENDING;
  }

  /** Marks `seq` acked; `false` when it is not a pending record here. */
  ack(seq: number): boolean {
    if (!this.isPending(seq)) return false;
    this.states[seq - this.firstSeq] = ACKED;
    this.pending--;
    return true;
  }

  /** The pending seqs above `afterSeq`, in order, at most `limit` of them. */
  pendingAfter(afterSeq: number, limit: number): number[] {
    const seqs: number[] = [];
    const count = this.lastSeq - this.firstSeq + 1;
    for (let i = Math.max(0, afterSeq + 1 - this.firstSeq); i < count && seqs.length < limit; i++) {
      if (this.states[i] === PENDING) seqs.push(this.firstSeq + i);
    }
    return seqs;
  }

  /** Append time (epoch ms) of the oldest pending record, or `undefined` when none is pending. */
  oldestPendingTime(): number | undefined {
    if (this.pending === 0) return undefined;
    const count = this.lastSeq - this.firstSeq + 1;
    while (this.cursor < count && this.states[this.cursor] !== PENDING) this.cursor++;
    return this.times[this.cursor];
  }

  /** The byte range `[start, end)` of the log file that holds the frames of `seqs` (increasing, not empty). */
  span(seqs: readonly number[]): { start: number; end: number } {
    const start = this.offsets[seqs[0]! - this.firstSeq]!;
    const last = seqs[seqs.length - 1]! - this.firstSeq;
    return { start, end: this.offsets[last]! + this.sizes[last]! };
  }

  /** Records `seq` as pending (appended at `timestamp`, its frame at `offset`); a seq already known is left alone. */
  add(seq: number, timestamp: number, offset: number, frameSize: number): void {
    const index = seq - this.firstSeq;
    if (index >= this.states.length) this.grow(index);
    if (this.states[index] !== NONE) return;
    this.states[index] = PENDING;
    this.times[index] = timestamp;
    this.offsets[index] = offset;
    this.sizes[index] = frameSize;
    this.pending++;
    this.lastSeq = Math.max(this.lastSeq, seq);
  }

  private grow(index: number): void {
    let capacity = this.states.length;
    while (capacity <= index) capacity *= 2;
    const states = new Uint8Array(capacity);
    states.set(this.states);
    const times = new Float64Array(capacity);
    times.set(this.times);
    const offsets = new Float64Array(capacity);
    offsets.set(this.offsets);
    const sizes = new Uint32Array(capacity);
    sizes.set(this.sizes);
    this.states = states;
    this.times = times;
    this.offsets = offsets;
    this.sizes = sizes;
  }
}
