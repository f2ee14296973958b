import { readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { SegmentFile } from './segment-file';
import { parseSegmentName } from './segment-name';

/** What a spool directory held when it was opened. */
export interface RecoveredSegments {
  /** Every segment found, read back (torn tails cut off), in seq order. */
  readonly segments: SegmentFile[];
  /** The seq the next record gets: above every seq on disk, and above every segment's name. */
  readonly nextSeq: number;
  /** Torn records found (cut short or failing their checksum), skipped. */
  readonly torn: number;
}

/** Reads back every segment of `dir` (what a previous process left), in seq order. */
export function recoverSegments(dir: string): RecoveredSegments {
  const segments: SegmentFile[] = [];
  let nextSeq = 1;
  let torn = 0;
  for (const file of readdirSync(dir).sort()) {
    const firstSeq = parseSegmentName(file);
    if (firstSeq === undefined) continue;
    const loaded = SegmentFile.load(dir, firstSeq);
    torn += loaded.torn;
    segments.push(loaded.segment);
    nextSeq = Math.max(nextSeq, firstSeq, loaded.segment.lastSeq + 1);
  }
  return { segments, nextSeq, torn };
}

/** Deletes the `.acks` files of `dir` whose segment is gone; one that resists waits for the next open. */
export function removeOrphanAcks(dir: string, segments: readonly SegmentFile[]): void {
  for (const file of readdirSync(dir)) {
    const match = /^(segment-\d+)\.acks$/.exec(file);
    if (!match || segments.some((segment) => segment.ackPath === join(dir, file))) continue;
    try {
      unlinkSync(join(dir, file));
    } catch {
      // Another attempt at the next open.
    }
  }
}
