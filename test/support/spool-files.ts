import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeAcks } from '../../packages/nestjs-deferred-work/src/spool/ack-entry';
import { encodeFrame, framePayload, scanFrames } from '../../packages/nestjs-deferred-work/src/spool/frame';

/** A sink's spool directory as the kill -9 tests read it: its pending records, and the requeue crash window. */

/**
 * Appends `items` again, as new records after the last one, to the newest segment of the spool in
 * `dir`, their old records left unacked: what a requeue leaves when the process dies between the two.
 */
export function appendAsRequeue(dir: string, items: readonly unknown[]): void {
  const segments = readdirSync(dir).filter((f) => /^segment-\d+\.log$/.test(f)).sort();
  const lastSeq = Math.max(...segments.flatMap((f) => scanFrames(readFileSync(join(dir, f))).frames.map((frame) => frame.seq)));
  const frames = items.map((item, i) => encodeFrame(lastSeq + 1 + i, Date.now(), JSON.stringify(item)));
  appendFileSync(join(dir, segments.at(-1)!), Buffer.concat(frames));
}

/** The records pending in the sink's spool directory, each with its seq, read with the spool's own frame and ack formats. */
export function readSpoolRecords<T>(dir: string): Array<{ seq: number; item: T }> {
  const files = readdirSync(dir);
  const acked = new Set(files.filter((f) => f.endsWith('.acks')).flatMap((f) => decodeAcks(readFileSync(join(dir, f)))));
  return files
    .filter((f) => /^segment-\d+\.log$/.test(f))
    .sort()
    .flatMap((f) => {
      const bytes = readFileSync(join(dir, f));
      return scanFrames(bytes)
        .frames.filter((frame) => !acked.has(frame.seq))
        .map((frame) => ({ seq: frame.seq, item: JSON.parse(framePayload(bytes, frame).toString('utf8')) as T }));
    });
}

/** The items pending in the sink's spool directory (see {@link readSpoolRecords}). */
export function readSpool<T>(dir: string): T[] {
  return readSpoolRecords<T>(dir).map((record) => record.item);
}
