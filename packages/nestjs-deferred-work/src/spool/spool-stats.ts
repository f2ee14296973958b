/** A record handed back by `Spool.replay()`. */
export interface SpoolRecord {
  /** Its sequence number: unique in the spool's directory, across restarts; what `ack` takes. */
  readonly seq: number;
  /** Epoch milliseconds when it was appended. */
  readonly timestamp: number;
  /** The bytes given to `append` (a string was stored as UTF-8). */
  readonly payload: Buffer;
}

/** What `Spool.stats()` reports. */
export interface SpoolStats {
  /** Records appended and not acked (recovered ones included). */
  pendingRecords: number;
  /** Bytes of the segment and ack files, what `maxBytes` bounds. */
  bytesOnDisk: number;
  /** Age of the oldest pending record, in milliseconds (0 when none is pending). */
  oldestPendingAgeMs: number;
  /** Segment files on disk. */
  segments: number;
  /** Records appended by this process. */
  appended: number;
  /**
   * Bytes this process wrote to the segment and ack files: each record once (frame header included)
   * and its ack entry. Divided by `appended`, the bytes written per record.
   */
  bytesWritten: number;
  /** Records acked by this process. */
  acked: number;
  /** Appends refused with `SpoolFullError` (`maxBytes` or disk full). */
  refused: number;
  /** Fsync calls made (segment, ack and directory files; one per file per group commit). */
  fsyncs: number;
  /** Group commits whose fsync failed. */
  syncErrors: number;
  /** Torn records found when the spool was opened (cut short or failing their checksum), skipped. */
  tornRecords: number;
  /** Ack writes the disk refused: those records are replayed again after a restart (at least once). */
  ackWriteFailures: number;
  /** Writes of appended records the disk refused (they stay in memory and are written when it has room). */
  writeErrors: number;
  /** Bytes of records appended and not written to their file yet (queued for the end of the turn, or refused by the disk). */
  unwrittenBytes: number;
  /** Of those, the records not acked: after `close()`, the ones lost (the disk refused them to the end). */
  unwrittenRecords: number;
}
