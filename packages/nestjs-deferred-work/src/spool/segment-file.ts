import { closeSync, existsSync, fsync, ftruncateSync, openSync, readFileSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ACK_ENTRY_BYTES, decodeAcks, encodeAcks } from './ack-entry';
import { framePayload, scanFrames } from './frame';

const fsyncAsync = promisify(fsync);

const NONE = 0;
const PENDING = 1;
const ACKED = 2;

/** `segment-<first seq, 16 digits>`: names sort as their seqs do. */
export function segmentBaseName(firstSeq: number): string {
  return `segment-${String(firstSeq).padStart(16, '0')}`;
}

/** The first seq of a segment file's name (`segment-<seq>.log`), or `undefined` for another file. */
export function parseSegmentName(file: string): number | undefined {
  const match = /^segment-(\d+)\.log$/.exec(file);
  return match ? Number(match[1]) : undefined;
}

/** Writes all of `buf` at `position`; on failure cuts the file back to `position` and rethrows. */
function writeAllAt(fd: number, buf: Buffer, position: number | null, sizeBefore: number): void {
  let done = 0;
  try {
    while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position === null ? null : position + done);
  } catch (error) {
    try {
      ftruncateSync(fd, sizeBefore);
    } catch {
      // Cutting a file shorter needs no space; should it fail, the partial frame fails its checksum on replay.
    }
    throw error;
  }
}

/**
 * One segment: its log file (`segment-<first seq>.log`, frames as in `frame.ts`), its ack file
 * (`segment-<first seq>.acks`, entries as in `ack-entry.ts`) and, in memory, the state of each of its
 * records (pending or acked) and their append times. Only the spool's active segment is appended to;
 * its log file descriptor is closed once the segment is sealed and synced.
 */
export class SegmentFile {
  /** The log file's path. */
  readonly logPath: string;
  /** The ack file's path. */
  readonly ackPath: string;
  /** Bytes of the log file. */
  logBytes = 0;
  /** Bytes of the ack file. */
  ackBytes = 0;
  /** Records not acked. */
  pending = 0;
  /** Highest seq written to this segment (`firstSeq - 1` when none). */
  lastSeq: number;
  /** Written since the last fsync. */
  logDirty = false;
  ackDirty = false;
  /** No more appends: the log descriptor is closed after its last fsync. */
  sealed = false;
  /** Unlinked: descriptors are closed as soon as no fsync is in flight. */
  deleted = false;

  private logFd: number | undefined;
  private ackFd: number | undefined;
  private states = new Uint8Array(256);
  private times = new Float64Array(256);
  /** Byte offset of each record's frame in the log file (what `readPending` reads). */
  private offsets = new Float64Array(256);
  private sizes = new Uint32Array(256);
  /** Frames appended and not written yet (they follow the file's last byte), and their bytes. */
  private queued: Buffer[] = [];
  private queuedSeqs: number[] = [];
  private queuedBytes = 0;
  /** Index below which no record is pending. */
  private cursor = 0;
  private syncsInFlight = 0;

  private constructor(
    dir: string,
    /** The seq of its first record (and in its name). */
    readonly firstSeq: number,
  ) {
    const base = segmentBaseName(firstSeq);
    this.logPath = join(dir, `${base}.log`);
    this.ackPath = join(dir, `${base}.acks`);
    this.lastSeq = firstSeq - 1;
  }

  /** A new, empty segment, created (`wx`) and open for appends. */
  static create(dir: string, firstSeq: number, flag: 'wx' | 'w' = 'wx'): SegmentFile {
    const segment = new SegmentFile(dir, firstSeq);
    segment.logFd = openSync(segment.logPath, flag);
    return segment;
  }

  /**
   * An existing segment, read back: its valid frames, minus acked ones. A torn tail is cut off the
   * file (so it is counted once, and never followed by new data); a torn ack entry likewise. Sealed.
   */
  static load(dir: string, firstSeq: number): { segment: SegmentFile; torn: number } {
    const segment = new SegmentFile(dir, firstSeq);
    segment.sealed = true;
    const bytes = readFileSync(segment.logPath);
    const scan = scanFrames(bytes);
    for (const frame of scan.frames) if (frame.seq >= firstSeq) segment.record(frame.seq, frame.timestamp, frame.offset, frame.size);
    segment.logBytes = scan.goodLength;
    if (scan.goodLength < bytes.length) truncateFile(segment.logPath, scan.goodLength);
    if (existsSync(segment.ackPath)) {
      const acks = readFileSync(segment.ackPath);
      for (const seq of decodeAcks(acks)) segment.ack(seq);
      segment.ackBytes = acks.length - (acks.length % ACK_ENTRY_BYTES);
      if (segment.ackBytes < acks.length) truncateFile(segment.ackPath, segment.ackBytes);
    }
    return { segment, torn: scan.torn };
  }

  /**
   * Appends one encoded frame (seq `seq`, appended at `timestamp`) in memory: it reaches the file with
   * the next `writeQueued()` (the spool calls it once per event-loop turn), with the frames queued
   * before and after it in one write.
   */
  append(frame: Buffer, seq: number, timestamp: number): void {
    if (this.logFd === undefined || this.sealed) throw new Error(`Spool segment ${this.logPath} is sealed`);
    const offset = this.logBytes;
    this.queued.push(frame);
    this.queuedSeqs.push(seq);
    this.queuedBytes += frame.length;
    this.logBytes += frame.length;
    this.logDirty = true;
    this.record(seq, timestamp, offset, frame.length);
  }

  /** Bytes of frames appended and not yet written to the file. */
  get unwrittenBytes(): number {
    return this.queuedBytes;
  }

  /** Records not acked whose frames are not written to the file yet. */
  get unwrittenRecords(): number {
    let count = 0;
    for (const seq of this.queuedSeqs) if (this.isPending(seq)) count++;
    return count;
  }

  /**
   * Writes the queued frames to the file, in one write. When the OS refuses part of it (disk full, an
   * I/O error), the whole frames it took are kept, the file is cut back after the last of them (no
   * partial frame is left), the rest stays queued for the next call, and the error is thrown.
   */
  writeQueued(): void {
    if (this.queuedBytes === 0 || this.logFd === undefined) return;
    const frames = this.queued;
    const start = this.logBytes - this.queuedBytes;
    const buf = frames.length === 1 ? frames[0]! : Buffer.concat(frames, this.queuedBytes);
    let done = 0;
    try {
      while (done < buf.length) done += writeSync(this.logFd, buf, done, buf.length - done, start + done);
    } catch (error) {
      let kept = 0;
      let whole = 0;
      for (const frame of frames) {
        if (kept + frame.length > done) break;
        kept += frame.length;
        whole++;
      }
      try {
        ftruncateSync(this.logFd, start + kept);
      } catch {
        // Cutting a file shorter needs no space; should it fail, the partial frame fails its checksum on replay.
      }
      this.queued = frames.slice(whole);
      this.queuedSeqs = this.queuedSeqs.slice(whole);
      this.queuedBytes -= kept;
      throw error;
    }
    this.queued = [];
    this.queuedSeqs = [];
    this.queuedBytes = 0;
  }

  /** Whether `seq` falls in this segment's range. */
  holds(seq: number): boolean {
    return seq >= this.firstSeq && seq <= this.lastSeq;
  }

  /** Whether `seq` is a record of this segment not acked yet. */
  isPending(seq: number): boolean {
    return this.holds(seq) && this.states[seq - this.firstSeq] === PENDING;
  }

  /** Marks `seq` acked in memory; `false` when it is not a pending record here. */
  ack(seq: number): boolean {
    if (!this.isPending(seq)) return false;
    this.states[seq - this.firstSeq] = ACKED;
    this.pending--;
    return true;
  }

  /** Appends ack entries for `seqs` to the ack file (no fsync: the group commit does it). */
  writeAcks(seqs: readonly number[]): void {
    if (this.deleted || seqs.length === 0) return;
    this.ackFd ??= openSync(this.ackPath, 'a');
    const entries = encodeAcks(seqs);
    writeAllAt(this.ackFd, entries, null, this.ackBytes);
    this.ackBytes += entries.length;
    this.ackDirty = true;
  }

  /** The pending seqs of this segment above `afterSeq`, in order, at most `limit` of them. */
  pendingAfter(afterSeq: number, limit: number): number[] {
    const seqs: number[] = [];
    const count = this.lastSeq - this.firstSeq + 1;
    for (let i = Math.max(0, afterSeq + 1 - this.firstSeq); i < count && seqs.length < limit; i++) {
      if (this.states[i] === PENDING) seqs.push(this.firstSeq + i);
    }
    return seqs;
  }

  /**
   * Reads the frames of `seqs` (records of this segment, in increasing order) back from the log file
   * with one read of the span they cover, checksums checked. A record whose frame no longer checks
   * out (the disk changed under us) is left out of the result.
   */
  read(seqs: readonly number[]): Array<{ seq: number; timestamp: number; payload: Buffer }> {
    if (seqs.length === 0) return [];
    const start = this.offsets[seqs[0]! - this.firstSeq]!;
    const last = seqs[seqs.length - 1]! - this.firstSeq;
    const end = this.offsets[last]! + this.sizes[last]!;
    const span = Buffer.allocUnsafe(end - start);
    // What the file holds is read from it; frames still queued (not written yet) from memory.
    const written = this.logBytes - this.queuedBytes;
    if (start < written) {
      const fd = openSync(this.logPath, 'r');
      try {
        const upTo = Math.min(end, written) - start;
        let done = 0;
        while (done < upTo) {
          const n = readSync(fd, span, done, upTo - done, start + done);
          if (n === 0) break;
          done += n;
        }
      } finally {
        closeSync(fd);
      }
    }
    if (end > written) {
      const memory = Buffer.concat(this.queued, this.queuedBytes);
      memory.copy(span, Math.max(0, written - start), Math.max(start, written) - written, end - written);
    }
    const wanted = new Set(seqs);
    const records: Array<{ seq: number; timestamp: number; payload: Buffer }> = [];
    for (const frame of scanFrames(span).frames) {
      if (wanted.has(frame.seq)) records.push({ seq: frame.seq, timestamp: frame.timestamp, payload: framePayload(span, frame) });
    }
    return records;
  }

  /** Append time (epoch ms) of the oldest pending record, or `undefined` when none is pending. */
  oldestPendingTime(): number | undefined {
    if (this.pending === 0) return undefined;
    const count = this.lastSeq - this.firstSeq + 1;
    while (this.cursor < count && this.states[this.cursor] !== PENDING) this.cursor++;
    return this.times[this.cursor];
  }

  /** Fsyncs whatever was written since the last call (queued frames written first); resolves with the number of fsyncs made. */
  async sync(): Promise<number> {
    this.writeQueued();
    const fds: number[] = [];
    if (this.logDirty && this.logFd !== undefined) fds.push(this.logFd);
    if (this.ackDirty && this.ackFd !== undefined) fds.push(this.ackFd);
    this.logDirty = this.ackDirty = false;
    if (fds.length === 0) {
      this.closeIdle();
      return 0;
    }
    this.syncsInFlight++;
    try {
      await Promise.all(fds.map((fd) => fsyncAsync(fd)));
    } finally {
      this.syncsInFlight--;
      this.closeIdle();
    }
    return fds.length;
  }

  /** Stops appends to this segment; its log descriptor closes after its last fsync. */
  seal(): void {
    this.sealed = true;
    this.closeIdle();
  }

  /** Removes both files; descriptors close once no fsync is in flight. */
  delete(): void {
    this.deleted = true;
    for (const path of [this.logPath, this.ackPath]) {
      try {
        unlinkSync(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    this.logBytes = this.ackBytes = 0;
    this.queued = [];
    this.queuedSeqs = [];
    this.queuedBytes = 0;
    this.logDirty = this.ackDirty = false;
    this.closeIdle();
  }

  /** Closes both descriptors now (the spool's `close()`, after its last sync). */
  close(): void {
    this.sealed = true;
    this.closeIdle(true);
  }

  private closeIdle(all = false): void {
    if (this.syncsInFlight > 0) return;
    const idle = this.sealed && !this.logDirty && this.queuedBytes === 0;
    if (this.logFd !== undefined && (this.deleted || all || idle)) {
      closeSync(this.logFd);
      this.logFd = undefined;
    }
    if (this.ackFd !== undefined && (this.deleted || all)) {
      closeSync(this.ackFd);
      this.ackFd = undefined;
    }
  }

  private record(seq: number, timestamp: number, offset: number, frameSize: number): void {
    const index = seq - this.firstSeq;
    if (index >= this.states.length) {
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
    if (this.states[index] !== NONE) return;
    this.states[index] = PENDING;
    this.times[index] = timestamp;
    this.offsets[index] = offset;
    this.sizes[index] = frameSize;
    this.pending++;
    this.lastSeq = Math.max(this.lastSeq, seq);
  }
}

function truncateFile(path: string, length: number): void {
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, length);
    // Made durable with the next group commit would do too; a cut that is lost is only cut again.
  } finally {
    closeSync(fd);
  }
}

