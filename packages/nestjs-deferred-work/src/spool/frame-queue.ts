import { ftruncateSync, writeSync } from 'node:fs';

/**
 * A segment's frames appended and not written to its log file yet: they follow the file's last
 * byte, and reach it together, in one write, with `writeTo`.
 */
export class FrameQueue {
  /** Bytes of the queued frames. */
  bytes = 0;

  private frames: Buffer[] = [];
  private seqs: number[] = [];

  /** Queues the frame of record `seq`. */
  push(frame: Buffer, seq: number): void {
    this.frames.push(frame);
    this.seqs.push(seq);
    this.bytes += frame.length;
  }

  /** How many queued records `isPending` counts (those not acked). */
  count(isPending: (seq: number) => boolean): number {
    let count = 0;
    for (const seq of this.seqs) if (isPending(seq)) count++;
    return count;
  }

  /** The queued frames as one buffer (what a read past the file's end finds). */
  joined(): Buffer {
    return Buffer.concat(this.frames, this.bytes);
  }

  /**
   * Writes the queued frames to `fd` at `start` (the file's end), in one write. When the OS refuses
   * part of it (disk full, an I/O error), the whole frames it took are kept, the file is cut back after
   * the last of them (no partial frame is left), the rest stays queued, and the error is thrown.
   */
  writeTo(fd: number, start: number): void {
    const frames = this.frames;
    const buf = frames.length === 1 ? frames[0]! : Buffer.concat(frames, this.bytes);
    let done = 0;
    try {
      while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, start + done);
    } catch (error) {
      let kept = 0;
      let whole = 0;
      for (const frame of frames) {
        if (kept + frame.length > done) break;
        kept += frame.length;
        whole++;
      }
      try {
        ftruncateSync(fd, start + kept);
      } catch {
        // Cutting a file shorter needs no space; should it fail, the partial frame fails its checksum on replay.
      }
      this.frames = frames.slice(whole);
      this.seqs = this.seqs.slice(whole);
      this.bytes -= kept;
      throw error;
    }
    this.clear();
  }

  /** Drops every queued frame. */
  clear(): void {
    this.frames = [];
    this.seqs = [];
    this.bytes = 0;
  }
}
