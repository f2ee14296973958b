import { framePayload, scanFrames } from './frame';
import type { SegmentFile } from './segment-file';
import { readNoFollow } from './spool-dir';
import type { SpoolRecord } from './spool-stats';

/**
 * The pending records of `segments` below `replayBefore` (what a previous process left), in sequence
 * order, each segment's log read whole. Torn records are never yielded. A segment deleted meanwhile
 * is passed over.
 */
export function* replaySegments(segments: readonly SegmentFile[], replayBefore: number): Generator<SpoolRecord> {
  for (const segment of [...segments]) {
    if (segment.firstSeq >= replayBefore) break;
    if (segment.pending === 0 || segment.deleted) continue;
    let bytes: Buffer;
    try {
      bytes = readNoFollow(segment.logPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted while replaying
      throw error;
    }
    for (const frame of scanFrames(bytes).frames) {
      if (frame.seq >= replayBefore) return;
      if (segment.isPending(frame.seq)) yield { seq: frame.seq, timestamp: frame.timestamp, payload: framePayload(bytes, frame) };
    }
  }
}

/**
 * Up to `limit` pending records of `segments` with a seq above `afterSeq`, in seq order, each
 * segment's span read once; `missing` lists the pending seqs whose frame no longer checks out.
 */
export function readPendingRecords(
  segments: readonly SegmentFile[],
  afterSeq: number,
  limit: number,
): { records: SpoolRecord[]; missing: number[] } {
  const records: SpoolRecord[] = [];
  const missing: number[] = [];
  for (const segment of segments) {
    const left = limit - records.length - missing.length;
    if (left <= 0) break;
    if (segment.lastSeq <= afterSeq || segment.pending === 0) continue;
    const seqs = segment.pendingAfter(afterSeq, left);
    const read = segment.read(seqs);
    let r = 0;
    for (const seq of seqs) {
      if (r < read.length && read[r]!.seq === seq) records.push(read[r++]!);
      else missing.push(seq);
    }
  }
  return { records, missing };
}
