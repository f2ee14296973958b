import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeferredWorkConfigError } from '../core/errors/deferred-work-config.error';
import { encodeAcks } from './ack-entry';
import { FRAME_HEADER_BYTES, scanFrames } from './frame';
import { Spool } from './spool';
import { SpoolFullError } from './spool-full.error';
import { SpoolLockedError } from './spool-locked.error';

/** Real files in a temp dir: no fs mocks. */
let dir: string;
const open: Spool[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'spool-spec-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((spool) => spool.close()));
  rmSync(dir, { recursive: true, force: true });
});

function openSpool(options: Parameters<typeof Spool.open>[1] = {}): Spool {
  const spool = Spool.open(dir, { syncIntervalMs: 5, ...options });
  open.push(spool);
  return spool;
}

async function reopen(spool: Spool, options: Parameters<typeof Spool.open>[1] = {}): Promise<Spool> {
  await spool.close();
  return openSpool(options);
}

const payloads = (spool: Spool) => [...spool.replay()].map((record) => record.payload.toString());
const files = (suffix: string) => readdirSync(dir).filter((file) => file.endsWith(suffix)).sort();
/** The log file holding records (the one a reopen left behind is empty). */
const firstLog = () => join(dir, files('.log').find((file) => statSync(join(dir, file)).size > 0)!);

describe('Spool: append, ack, replay', () => {
  it('replays exactly the un-acked records, in order, after close and reopen; fully acked segments are deleted', async () => {
    let spool = openSpool({ segmentBytes: 340 }); // 10 frames of 34 bytes per segment
    const seqs = Array.from({ length: 60 }, (_, i) => spool.append(`record ${String(i).padStart(3, '0')}`));
    expect(seqs).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const segmentsBefore = files('.log').length;
    expect(segmentsBefore).toBe(6);
    spool.ack(seqs.slice(0, 25)); // the first segments entirely
    spool.ack([30, 31, 47, 59, 999_999]); // scattered, and one unknown
    expect(spool.ack(30)).toBe(0); // already acked: ignored
    expect(files('.log').length).toBeLessThan(segmentsBefore);
    expect(files('.log')[0]).not.toBe('segment-0000000000000001.log');
    expect(spool.stats()).toMatchObject({ pendingRecords: 31, appended: 60, acked: 29 });

    spool = await reopen(spool, { segmentBytes: 340 });
    const expected = Array.from({ length: 60 }, (_, i) => i)
      .filter((i) => i >= 25 && ![29, 30, 46, 58].includes(i))
      .map((i) => `record ${String(i).padStart(3, '0')}`);
    expect(payloads(spool)).toEqual(expected);
    expect([...spool.replay()].map((r) => r.seq)).toEqual(expected.map((p) => Number(p.slice(7)) + 1));
    expect(spool.stats()).toMatchObject({ pendingRecords: 31, tornRecords: 0 });
    expect(spool.stats().oldestPendingAgeMs).toBeGreaterThanOrEqual(0);
    expect(spool.stats().oldestPendingAgeMs).toBeLessThan(10_000);

    // Acking everything replayed deletes every old segment and its acks.
    spool.ack([...spool.replay()].map((r) => r.seq));
    expect(spool.stats()).toMatchObject({ pendingRecords: 0, oldestPendingAgeMs: 0, segments: 1 });
    expect(files('.acks')).toEqual([]);
  });

  it('never reuses a seq, even when everything was acked and deleted', async () => {
    let spool = openSpool();
    spool.ack([spool.append('a'), spool.append('b'), spool.append('c')]);
    spool = await reopen(spool);
    expect(payloads(spool)).toEqual([]);
    expect(spool.append('d')).toBe(4);
    spool = await reopen(spool);
    expect([...spool.replay()].map((r) => [r.seq, r.payload.toString()])).toEqual([[4, 'd']]);
  });

  it('replays only what a previous process left, not records appended since the open; acks survive a reopen', async () => {
    let spool = openSpool();
    spool.append('old 1');
    const old2 = spool.append('old 2');
    spool.append(Buffer.from([0, 1, 2, 255]));
    spool = await reopen(spool);
    spool.append('new');
    spool.ack(old2);
    expect(payloads(spool)).toEqual(['old 1', '\u0000\u0001\u0002\ufffd']);
    expect([...spool.replay()][1]!.payload).toEqual(Buffer.from([0, 1, 2, 255]));
    spool = await reopen(spool);
    expect(payloads(spool)).toEqual(['old 1', '\u0000\u0001\u0002\ufffd', 'new']);
  });

  it('reports the age of the oldest pending record from the timestamp in its frame', async () => {
    const spool = openSpool();
    const first = spool.append('first');
    await new Promise((resolve) => setTimeout(resolve, 60));
    spool.append('second');
    expect(spool.stats().oldestPendingAgeMs).toBeGreaterThanOrEqual(50);
    spool.ack(first);
    expect(spool.stats().oldestPendingAgeMs).toBeLessThan(50);
  });
});

describe('Spool: writes once per event-loop turn', () => {
  const logSize = () => readdirSync(dir).filter((f) => f.endsWith('.log')).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);

  it("writes a turn's records to the file together at the end of the turn; readPending() reads them before that, from memory", async () => {
    const spool = openSpool();
    const seqs = ['a', 'b', 'c'].map((r) => spool.append(r));
    expect(logSize()).toBe(0); // still queued
    expect(spool.stats().unwrittenBytes).toBe(3 * (FRAME_HEADER_BYTES + 1));
    expect(spool.readPending(0, 10).records.map((r) => [r.seq, r.payload.toString()])).toEqual([[seqs[0], 'a'], [seqs[1], 'b'], [seqs[2], 'c']]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(logSize()).toBe(3 * (FRAME_HEADER_BYTES + 1));
    expect(spool.stats()).toMatchObject({ unwrittenBytes: 0, writeErrors: 0 });
    // A record queued after written ones: one read spans the file and memory.
    spool.append('d');
    expect(spool.readPending(seqs[1]!, 10).records.map((r) => r.payload.toString())).toEqual(['c', 'd']);
  });

  it('writes at once past 1 MiB queued in one turn (a long synchronous loop stays bounded in memory)', () => {
    const spool = openSpool({ segmentBytes: 4 << 20, maxBytes: 16 << 20 });
    const record = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 20; i++) spool.append(record);
    expect(logSize()).toBeGreaterThanOrEqual(1 << 20);
    expect(spool.stats().unwrittenBytes).toBeLessThan(1 << 20);
  });

  it('synced() writes what is queued before its fsync', async () => {
    const spool = openSpool();
    spool.append('e');
    await spool.synced();
    expect(logSize()).toBe(FRAME_HEADER_BYTES + 1);
  });
});

describe('Spool: torn records', () => {
  async function spoolOf(n: number): Promise<void> {
    const spool = openSpool();
    for (let i = 0; i < n; i++) spool.append(`record ${i}`);
    await spool.close();
  }

  it('a last frame cut short is skipped and counted, the records before it replayed, and later appends readable', async () => {
    await spoolOf(5);
    const log = firstLog();
    truncateSync(log, statSync(log).size - 3);
    let spool = openSpool();
    expect(spool.stats().tornRecords).toBe(1);
    expect(payloads(spool)).toEqual(['record 0', 'record 1', 'record 2', 'record 3']);
    expect(scanFrames(readFileSync(log)).torn).toBe(0); // the torn tail was cut off the file
    spool.append('after the crash');
    spool = await reopen(spool);
    expect(spool.stats().tornRecords).toBe(0); // counted once, not at every open
    expect(payloads(spool)).toEqual(['record 0', 'record 1', 'record 2', 'record 3', 'after the crash']);
  });

  it('a flipped byte in a payload costs that record only, never garbage or the records around it', async () => {
    await spoolOf(5);
    const log = firstLog();
    const bytes = readFileSync(log);
    const third = scanFrames(bytes).frames[2]!;
    bytes[third.offset + FRAME_HEADER_BYTES + 3]! ^= 0x20;
    writeFileSync(log, bytes);
    let spool = openSpool();
    expect(spool.stats()).toMatchObject({ tornRecords: 1, pendingRecords: 4 });
    expect(payloads(spool)).toEqual(['record 0', 'record 1', 'record 3', 'record 4']);
    spool.append('later');
    spool.ack([...spool.replay()].map((r) => r.seq)); // the torn record is never pending: its segment goes
    spool = await reopen(spool);
    expect(payloads(spool)).toEqual(['later']);
    expect(files('.log').every((file) => file !== 'segment-0000000000000001.log')).toBe(true);
  });

  it('a torn tail followed by garbage, and a torn ack entry: records before kept, acks that were whole still count', async () => {
    let spool = openSpool();
    for (let i = 0; i < 4; i++) spool.append(`record ${i}`);
    spool.ack(2);
    await spool.close();
    writeFileSync(firstLog(), Buffer.concat([readFileSync(firstLog()), Buffer.from('\x10\x00\x00\x00half a frame')]));
    const acks = join(dir, files('.acks')[0]!);
    writeFileSync(acks, Buffer.concat([readFileSync(acks), Buffer.from([3, 0, 0])])); // an ack of 3, cut short
    spool = openSpool();
    expect(spool.stats().tornRecords).toBe(1);
    expect(payloads(spool)).toEqual(['record 0', 'record 2', 'record 3']);
    spool.ack(3); // seq 3 is "record 2"
    spool = await reopen(spool);
    expect(payloads(spool)).toEqual(['record 0', 'record 3']);
  });
});

describe('Spool: group commit', () => {
  it('1,000 appends within one interval take a handful of fsyncs, and synced() resolves after them', async () => {
    const spool = openSpool({ syncIntervalMs: 100 });
    await spool.synced(); // the open's own commit (the new segment and the directory)
    const atStart = spool.stats().fsyncs;
    const started = Date.now();
    for (let i = 0; i < 1000; i++) spool.append(`record ${i}`);
    expect(spool.stats().fsyncs).toBe(atStart); // nothing fsynced per record
    let resolved = false;
    const synced = spool.synced().then(() => (resolved = true));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(resolved).toBe(false); // not before the interval
    await synced;
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    const fsyncs = spool.stats().fsyncs - atStart;
    expect(fsyncs).toBeGreaterThanOrEqual(1);
    expect(fsyncs).toBeLessThanOrEqual(3);
    // Acks share the commit: 1,000 acks, one more round.
    for (let seq = 1; seq <= 1000; seq++) spool.ack(seq);
    await spool.synced();
    expect(spool.stats().fsyncs - atStart).toBeLessThanOrEqual(5);
  });

  it('appends spread over several intervals cost about one fsync per interval, not per record', async () => {
    const spool = openSpool({ syncIntervalMs: 20 });
    await spool.synced();
    const atStart = spool.stats().fsyncs;
    // 30 rounds of 50 appends, a timer turn apart: the bound is on the intervals that actually passed
    // (a busy machine stretches the loop), never on a wall-clock figure.
    const started = Date.now();
    let appended = 0;
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 50; i++, appended++) spool.append(`record ${appended}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await spool.synced();
    const intervals = Math.ceil((Date.now() - started) / 20);
    const fsyncs = spool.stats().fsyncs - atStart;
    expect(appended).toBe(1500);
    expect(fsyncs).toBeLessThanOrEqual(intervals + 3);
    expect(fsyncs).toBeLessThan(appended / 10); // far from one per record
  });

  it('synced() resolves at once when nothing is waiting for an fsync', async () => {
    const spool = openSpool({ syncIntervalMs: 10_000 });
    await spool.close(); // close flushes the open's commit without waiting for the timer
    await expect(spool.synced()).resolves.toBeUndefined();
  });
});

describe('Spool: full', () => {
  it('maxBytes reached: a typed refusal, the spooled records intact and replayable, room again once acked', async () => {
    let spool = openSpool({ maxBytes: 4096, segmentBytes: 1024 });
    const record = (i: number) => `record ${i}`.padEnd(100, '.');
    const seqs: number[] = [];
    let refusal: unknown;
    for (let i = 0; i < 100; i++) {
      try {
        seqs.push(spool.append(record(i)));
      } catch (error) {
        refusal = error;
        break;
      }
    }
    expect(refusal).toBeInstanceOf(SpoolFullError);
    expect(refusal).toMatchObject({ reason: 'max-bytes', dir });
    expect((refusal as Error).message).toMatch(/is full .* raise spool\.maxBytes/);
    expect(seqs.length).toBe(Math.floor(4096 / (100 + FRAME_HEADER_BYTES)));
    expect(() => spool.append('x')).toThrow(SpoolFullError);
    expect(spool.stats()).toMatchObject({ refused: 2, pendingRecords: seqs.length });
    expect(spool.stats().bytesOnDisk).toBeLessThanOrEqual(4096);

    spool.ack(seqs.slice(0, 8)); // the first segment: deleted, room again
    const later = spool.append('later');
    spool = await reopen(spool, { maxBytes: 4096, segmentBytes: 1024 });
    expect(payloads(spool)).toEqual([...seqs.slice(8).map((seq) => record(seq - 1)), 'later']);
    expect([...spool.replay()].at(-1)!.seq).toBe(later);
  });

  it('a spool of one segment (maxBytes = segmentBytes) that filled up has room again once every record is acked', async () => {
    let spool = openSpool({ maxBytes: 4096, segmentBytes: 4096 });
    const record = (i: number) => `record ${i}`.padEnd(100, '.');
    const seqs: number[] = [];
    for (let i = 0; seqs.length === i; i++) {
      try {
        seqs.push(spool.append(record(i)));
      } catch (error) {
        expect(error).toBeInstanceOf(SpoolFullError);
      }
    }
    expect(seqs.length).toBe(Math.floor(4096 / (100 + FRAME_HEADER_BYTES)));
    expect(spool.ack(seqs)).toBe(seqs.length); // the active segment is all acked, and its ack file adds bytes

    const after = [spool.append(record(100)), spool.append(record(101))];
    expect(after).toEqual([seqs.length + 1, seqs.length + 2]);
    expect(files('.log')).toEqual([`segment-${String(seqs.length + 1).padStart(16, '0')}.log`]); // the drained one is gone
    expect(spool.stats()).toMatchObject({ pendingRecords: 2, refused: 1, bytesOnDisk: 2 * (100 + FRAME_HEADER_BYTES) });
    spool = await reopen(spool, { maxBytes: 4096, segmentBytes: 4096 });
    expect(payloads(spool)).toEqual([record(100), record(101)]);
  });

  it('bytesOnDisk is 0 once everything is acked, and after a reopen matches the files on disk', async () => {
    const onDisk = () => readdirSync(dir).filter((f) => /\.(log|acks)$/.test(f)).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
    let spool = openSpool();
    const seqs = [spool.append('a'), spool.append('b'), spool.append('c')];
    spool.writeNow();
    expect(spool.stats().bytesOnDisk).toBe(onDisk());
    spool.ack(seqs);
    expect(spool.stats()).toMatchObject({ pendingRecords: 0, bytesOnDisk: 0 });
    expect(onDisk()).toBe(0);
    // A previous process left a segment whose records are all acked (written by hand here): it is
    // deleted at open, and its bytes are not subtracted from the rest's.
    const kept = [spool.append('d'), spool.append('e')];
    spool = await reopen(spool);
    const left = files('.log').find((file) => statSync(join(dir, file)).size > 0)!;
    writeFileSync(join(dir, left.replace('.log', '.acks')), encodeAcks(kept));
    const pending = spool.append('f');
    spool = await reopen(spool);
    expect(spool.stats()).toMatchObject({ pendingRecords: 1, bytesOnDisk: onDisk() });
    expect(spool.stats().bytesOnDisk).toBeGreaterThan(0);
    spool.ack(pending);
    expect(spool.stats().bytesOnDisk).toBe(0);
  });

  it('a record larger than a segment is refused with a RangeError that names segmentBytes', () => {
    const spool = openSpool({ segmentBytes: 1024 });
    expect(() => spool.append(Buffer.alloc(1024))).toThrow(/segmentBytes/);
    expect(spool.stats().appended).toBe(0);
  });
});

describe('Spool: lock and options', () => {
  it('a second open of the same directory in one process is refused; after close() it opens', async () => {
    const spool = openSpool();
    expect(() => Spool.open(dir)).toThrow(SpoolLockedError);
    expect(() => Spool.open(dir)).toThrow(new RegExp(`${dir}.*locked by process ${process.pid}.*one process per spool directory`));
    await spool.close();
    openSpool();
  });

  it('a lock file whose process is dead is taken over', async () => {
    writeFileSync(join(dir, 'spool.lock'), '2147483646\n'); // no such process
    const spool = openSpool();
    expect(readFileSync(join(dir, 'spool.lock'), 'utf8').trim()).toBe(String(process.pid));
    await spool.close();
    expect(files('.lock')).toEqual([]);
  });

  it('bad options fail with the option and the fix', () => {
    expect(() => Spool.open(dir, { maxBytes: -1 })).toThrow(DeferredWorkConfigError);
    expect(() => Spool.open(dir, { syncIntervalMs: 1.5 })).toThrow(/spool\.syncIntervalMs.*leave it out for the default \(200\)/);
    expect(() => Spool.open(dir, { maxBytes: 4096, segmentBytes: 8192 })).toThrow(/segmentBytes.*larger than maxBytes/);
    expect(files('.lock')).toEqual([]); // nothing taken
  });

  it('a path that cannot be a directory fails with a configuration error naming the option, the path given and the fix', () => {
    writeFileSync(join(dir, 'file'), 'x');
    const under = join(dir, 'file', 'bull');
    expect(() => Spool.open(under, {}, { option: 'spool.dir', given: join(dir, 'file') })).toThrow(DeferredWorkConfigError);
    expect(() => Spool.open(under, {}, { option: 'spool.dir', given: join(dir, 'file') })).toThrow(
      new RegExp(`invalid option "spool\\.dir": cannot use the spool directory ${under} \\(sink folder under spool\\.dir ${join(dir, 'file')}\\): ENOTDIR.*A part of that path is a file`),
    );
  });

  it('a lock held by a live process names the sink folder and the directory given', () => {
    const sub = join(dir, 'bull');
    openSpool(); // takes nothing in sub
    const first = Spool.open(sub);
    open.push(first);
    expect(() => Spool.open(sub, {}, { option: 'sinkOptions.bull.spool.dir', given: dir })).toThrow(
      new RegExp(`Spool directory ${sub} \\(sink folder under sinkOptions\\.bull\\.spool\\.dir ${dir}\\) is locked by process ${process.pid}.*its own spool dir \\(sinkOptions\\.bull\\.spool\\.dir\\)`),
    );
  });
});

describe('Spool: file modes and links', () => {
  it('creates its directory 0700 and its files 0600', async () => {
    const sub = join(dir, 'new', 'sink');
    const spool = Spool.open(sub, { syncIntervalMs: 5 });
    open.push(spool);
    const seq = spool.append('payload');
    spool.append('other');
    spool.ack(seq);
    await spool.synced();
    expect(statSync(sub).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'new')).mode & 0o777).toBe(0o700);
    const names = readdirSync(sub);
    expect(names.filter((n) => /\.(log|acks|lock)$/.test(n)).length).toBeGreaterThanOrEqual(3);
    for (const name of names) expect([name, statSync(join(sub, name)).mode & 0o777]).toEqual([name, 0o600]);
  });

  it('refuses a directory writable by every user, saying to chmod it', () => {
    chmodSync(dir, 0o777);
    expect(() => Spool.open(dir, {}, { option: 'spool.dir', given: dir })).toThrow(new RegExp(`"spool\\.dir": the spool directory ${dir} is writable by every user \\(mode 777\\).*chmod 700 ${dir}`));
    chmodSync(dir, 0o700);
    expect(files('.lock')).toEqual([]);
  });

  it('never follows a symbolic link planted among its files', async () => {
    let spool = openSpool();
    spool.append('a');
    spool = await reopen(spool);
    await spool.close();
    open.splice(open.indexOf(spool), 1);
    // A link in place of a segment: the open fails naming it, and the link's target is never touched.
    const target = join(dir, '..', `spool-target-${process.pid}`);
    writeFileSync(target, 'not a segment');
    const log = firstLog();
    rmSync(log);
    symlinkSync(target, log);
    try {
      expect(() => Spool.open(dir)).toThrow(/ELOOP.*never follows a symbolic link/s);
      expect(readFileSync(target, 'utf8')).toBe('not a segment');
      expect(files('.lock')).toEqual([]);
    } finally {
      rmSync(target, { force: true });
    }
  });
});
