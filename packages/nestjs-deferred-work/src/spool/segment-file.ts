import { closeSync, constants, existsSync, fsync, openSync, readSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ACK_ENTRY_BYTES, decodeAckFile, encodeAcks, encodeMark } from './ack-entry';
import { framePayload, scanFrames } from './frame';
import { FrameQueue } from './frame-queue';
import { truncateFile, writeAllAt } from './file-writes';
import { segmentBaseName } from './segment-name';
import { SegmentRecords } from './segment-records';
import { NO_FOLLOW, readNoFollow, SPOOL_FILE_MODE } from './spool-dir';

const { O_APPEND, O_CREAT, O_EXCL, O_RDONLY, O_TRUNC, O_WRONLY } = constants;
/** Reading a spool file: never through a symbolic link. */
const READ_FLAGS = O_RDONLY | NO_FOLLOW;

const fsyncAsync = promisify(fsync);

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
  /** Written since the last fsync. */
  logDirty = false;
  ackDirty = false;
  /** Batch marks found in the ack file at load (first seq to count; see `encodeMark`). */
  marks: ReadonlyMap<number, number> = new Map();
  /** No more appends: the log descriptor is closed after its last fsync. */
  sealed = false;
  /** Unlinked: descriptors are closed as soon as no fsync is in flight. */
  deleted = false;

  private logFd: number | undefined;
  private ackFd: number | undefined;
  private readonly records: SegmentRecords;
  /** Frames appended and not written yet (they follow the file's last byte), and their bytes. */
  private readonly queue = new FrameQueue();
  private syncsInFlight = 0;

  private constructor(
    dir: string,
    /** The seq of its first record (and in its name). */
    readonly firstSeq: number,
  ) {
    const base = segmentBaseName(firstSeq);
    this.logPath = join(dir, `${base}.log`);
    this.ackPath = join(dir, `${base}.acks`);
    this.records = new SegmentRecords(firstSeq);
  }

  /** Records not acked. */
  get pending(): number {
    return this.records.pending;
  }

  /** Highest seq written to this segment (`firstSeq - 1` when none). */
  get lastSeq(): number {
    return this.records.lastSeq;
  }

  /** A new, empty segment, created (`wx`) and open for appends. */
  static create(dir: string, firstSeq: number, flag: 'wx' | 'w' = 'wx'): SegmentFile {
    const segment = new SegmentFile(dir, firstSeq);
    segment.logFd = openSync(segment.logPath, O_WRONLY | O_CREAT | NO_FOLLOW | (flag === 'wx' ? O_EXCL : O_TRUNC), SPOOL_FILE_MODE);
    return segment;
  }

  /**
   * An existing segment, read back: its valid frames, minus acked ones. A torn tail is cut off the
   * file (so it is counted once, and never followed by new data); a torn ack entry likewise. Sealed.
   */
  static load(dir: string, firstSeq: number): { segment: SegmentFile; torn: number } {
    const segment = new SegmentFile(dir, firstSeq);
    segment.sealed = true;
    const bytes = readNoFollow(segment.logPath);
    const scan = scanFrames(bytes);
    for (const frame of scan.frames) if (frame.seq >= firstSeq) segment.records.add(frame.seq, frame.timestamp, frame.offset, frame.size);
    segment.logBytes = scan.goodLength;
    if (scan.goodLength < bytes.length) truncateFile(segment.logPath, scan.goodLength);
    if (existsSync(segment.ackPath)) {
      const acks = readNoFollow(segment.ackPath);
      const decoded = decodeAckFile(acks);
      for (const seq of decoded.acks) segment.ack(seq);
      segment.marks = decoded.marks;
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
    this.queue.push(frame, seq);
    this.logBytes += frame.length;
    this.logDirty = true;
    this.records.add(seq, timestamp, offset, frame.length);
  }

  /** Bytes of frames appended and not yet written to the file. */
  get unwrittenBytes(): number {
    return this.queue.bytes;
  }

  /** Records not acked whose frames are not written to the file yet. */
  get unwrittenRecords(): number {
    return this.queue.count((seq) => this.isPending(seq));
  }

  /**
   * Writes the queued frames to the file, in one write. When the OS refuses part of it (disk full, an
   * I/O error), the whole frames it took are kept, the file is cut back after the last of them (no
   * partial frame is left), the rest stays queued for the next call, and the error is thrown.
   */
  writeQueued(): void {
    if (this.queue.bytes === 0 || this.logFd === undefined) return;
    this.queue.writeTo(this.logFd, this.logBytes - this.queue.bytes);
  }

  /** Whether `seq` falls in this segment's range. */
  holds(seq: number): boolean {
    return this.records.holds(seq);
  }

  /** Whether `seq` is a record of this segment not acked yet. */
  isPending(seq: number): boolean {
    return this.records.isPending(seq);
  }

  /** Marks `seq` acked in memory; `false` when it is not a pending record here. */
  ack(seq: number): boolean {
    return this.records.ack(seq);
  }

  /** Appends ack entries for `seqs` to the ack file (no fsync: the group commit does it). */
  writeAcks(seqs: readonly number[]): void {
    if (seqs.length > 0) this.writeAckEntries(encodeAcks(seqs));
  }

  /** Appends a batch mark (a write of `count` records from `seq`) to the ack file, like acks. */
  writeMark(seq: number, count: number): void {
    this.writeAckEntries(encodeMark(seq, count));
  }

  private writeAckEntries(entries: Buffer): void {
    if (this.deleted) return;
    this.ackFd ??= openSync(this.ackPath, O_WRONLY | O_APPEND | O_CREAT | NO_FOLLOW, SPOOL_FILE_MODE);
    writeAllAt(this.ackFd, entries, null, this.ackBytes);
    this.ackBytes += entries.length;
    this.ackDirty = true;
  }

  /** The pending seqs of this segment above `afterSeq`, in order, at most `limit` of them. */
  pendingAfter(afterSeq: number, limit: number): number[] {
    return this.records.pendingAfter(afterSeq, limit);
  }

  /**
   * Reads the frames of `seqs` (records of this segment, in increasing order) back from the log file
   * with one read of the span they cover, checksums checked. A record whose frame no longer checks
   * out (the disk changed under us) is left out of the result.
   */
  read(seqs: readonly number[]): Array<{ seq: number; timestamp: number; payload: Buffer }> {
    if (seqs.length === 0) return [];
    const { start, end } = this.records.span(seqs);
    const span = Buffer.allocUnsafe(end - start);
    // What the file holds is read from it; frames still queued (not written yet) from memory.
    const written = this.logBytes - this.queue.bytes;
    if (start < written) {
      const fd = openSync(this.logPath, READ_FLAGS);
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
      const memory = this.queue.joined();
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
    return this.records.oldestPendingTime();
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
    this.queue.clear();
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
    const idle = this.sealed && !this.logDirty && this.queue.bytes === 0;
    if (this.logFd !== undefined && (this.deleted || all || idle)) {
      closeSync(this.logFd);
      this.logFd = undefined;
    }
    if (this.ackFd !== undefined && (this.deleted || all)) {
      closeSync(this.ackFd);
      this.ackFd = undefined;
    }
  }
}

