import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { scanFrames } from '../../spool/frame';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { DeferredItem } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext } from '../../core/sink.interface';
import type { DeadLetter } from '../../core/dead-letter.interface';
import { PROCESSOR_DEFAULTS } from '../defaults';
import { SinkProcessor } from './sink-processor';
import { SinkSpool, type SinkSpoolSettings } from './sink-spool';

const item = (n: number): DeferredItem => ({ kind: 'metric', name: 'm', value: n, when: 'always', createdAt: Date.now() });
const valueOf = (i: DeferredItem) => (i as { value: number }).value;

const dirs: string[] = [];
const open: SinkProcessor[] = [];
afterEach(async () => {
  for (const p of open.splice(0)) await p.spool?.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dw-sink-spool-'));
  dirs.push(dir);
  return dir;
}

/** A sink that is up or down (every write fails, retryable) as the test says; records what it got. */
function switchable() {
  const state = { up: true, got: [] as number[], batches: 0 };
  const sink: DeferredSink = {
    name: 'sw',
    write: async (batch: readonly DeferredItem[], _ctx: SinkWriteContext) => {
      state.batches++;
      if (!state.up) throw new Error('receiver down');
      for (const i of batch) state.got.push(valueOf(i));
    },
  };
  return { sink, state };
}

/** A sink that fails (retryable) the item of value `value` while `refusing()` holds and writes the rest of each batch; records the values written. */
function refusingOne(name: string, value: number, refusing: () => boolean, message: string) {
  const got: number[] = [];
  const sink: DeferredSink = {
    name,
    write: async (batch) => {
      const failed = batch.flatMap((i, index) => (refusing() && valueOf(i) === value ? [{ index, error: new Error(message) }] : []));
      for (const [index, i] of batch.entries()) if (!failed.some((f) => f.index === index)) got.push(valueOf(i));
      return { failed };
    },
  };
  return { sink, got };
}

function processorOn(sink: DeferredSink, settings: SinkSpoolSettings, options: Partial<typeof PROCESSOR_DEFAULTS> = {}) {
  const letters: DeadLetter[] = [];
  const logs: string[] = [];
  const failures: string[] = [];
  const spool = new SinkSpool(sink.name, settings, { warn: (_k, m) => logs.push(m), log: (m) => logs.push(m) });
  const processor = new SinkProcessor(
    sink,
    { ...PROCESSOR_DEFAULTS, flushIntervalMs: 1, initialBackoffMs: 1, maxBackoffMs: 5, maxAttempts: Number.MAX_SAFE_INTEGER, ...options },
    { deadLetter: (l) => letters.push(...l), writeFailed: (_name, message) => failures.push(message) },
    spool,
  );
  open.push(processor);
  const identity = () => {
    const s = processor.stats();
    expect(s.accepted).toBe(s.delivered + s.pending + s.dropped + s.deadLettered);
    return s;
  };
  return { processor, letters, logs, failures, identity };
}

/** A previous process's spool in `dir` holding items 0..count-1 (its sink down), closed. */
async function leftBehind(dir: string, count: number): Promise<void> {
  const down = switchable();
  down.state.up = false;
  const a = processorOn(down.sink, { dir });
  for (let n = 0; n < count; n++) a.processor.enqueue(item(n));
  await a.processor.spool!.close();
  open.splice(open.indexOf(a.processor), 1);
}

const soon = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe('SinkProcessor with a spool', () => {
  it('spools every accepted item with a stable id and acks it once delivered', async () => {
    const { sink, state } = switchable();
    const { processor, identity } = processorOn(sink, { dir: tempDir() });
    processor.start();
    const items = Array.from({ length: 50 }, (_, n) => item(n));
    for (const i of items) expect(processor.enqueue(i)).toBe(true);
    expect(items.every((i) => /^dw-[0-9a-f-]{36}$/.test(i.id!))).toBe(true);
    expect(new Set(items.map((i) => i.id)).size).toBe(50);
    expect(identity().spool!.pending).toBe(50);
    expect(await processor.flush(Date.now() + 2000)).toBe(true);
    expect(state.got).toEqual(items.map(valueOf));
    const s = identity();
    expect(s.spool).toMatchObject({ pending: 0, appended: 50, acked: 50, onDiskOnly: 0 });
  });

  it('keeps what does not fit in memory on disk while the sink is down, and delivers it all, in order, when it is back', async () => {
    const { sink, state } = switchable();
    state.up = false;
    const { processor, identity } = processorOn(sink, { dir: tempDir() }, { maxQueueSize: 20, maxBatchSize: 10 });
    processor.start();
    for (let n = 0; n < 500; n++) expect(processor.enqueue(item(n))).toBe(true);
    await soon();
    const during = identity();
    expect(during.dropped).toBe(0);
    expect(during.pending).toBe(500);
    expect(during.spool!.onDiskOnly).toBe(480);
    expect(during.queueDepth + during.inFlight).toBe(20);
    state.up = true;
    expect(await processor.flush(Date.now() + 5000)).toBe(true);
    expect(state.got).toEqual(Array.from({ length: 500 }, (_, n) => n));
    expect(identity().spool).toMatchObject({ pending: 0, onDiskOnly: 0 });
  });

  it('leaves what is undelivered at the shutdown deadline in the spool, and the next process delivers it first, before new items', async () => {
    const dir = tempDir();
    const first = switchable();
    first.state.up = false;
    const a = processorOn(first.sink, { dir }, { maxQueueSize: 20, maxBatchSize: 10 });
    a.processor.start();
    for (let n = 0; n < 100; n++) a.processor.enqueue(item(n));
    expect(await a.processor.shutdown(Date.now() + 100)).toBe(0);
    const s = a.identity();
    expect(s.deadLettered).toBe(0);
    expect(s.pending).toBe(100); // still owed: on disk for the next start
    expect(a.letters).toHaveLength(0);
    expect(a.processor.spool!.leftForNextStart).toBe(100);
    await a.processor.spool!.close();

    const second = switchable();
    const b = processorOn(second.sink, { dir }, { maxQueueSize: 20, maxBatchSize: 10 });
    expect(b.identity()).toMatchObject({ accepted: 100, pending: 100 });
    expect(b.logs.join('\n')).toContain('100 item(s) left by a previous process');
    // Accepted before start(): it waits behind the replay.
    b.processor.enqueue(item(1000));
    await soon();
    expect(second.state.got).toEqual([]); // nothing before the sinks are attached (start)
    b.processor.start();
    b.processor.enqueue(item(1001));
    expect(await b.processor.flush(Date.now() + 5000)).toBe(true);
    expect(second.state.got).toEqual([...Array.from({ length: 100 }, (_, n) => n), 1000, 1001]);
    expect(b.identity().spool).toMatchObject({ replayed: 100, pending: 0 });
  });

  it('skips and counts a torn tail, and replays the rest', async () => {
    const dir = tempDir();
    const first = switchable();
    first.state.up = false;
    const a = processorOn(first.sink, { dir });
    for (let n = 0; n < 10; n++) a.processor.enqueue(item(n));
    await a.processor.spool!.close();
    const segment = readdirSync(dir).find((f) => f.endsWith('.log'))!;
    // Half a frame: a header announcing 100 bytes, and 10 of them.
    const torn = Buffer.alloc(34);
    torn.writeUInt32LE(100, 0);
    appendFileSync(join(dir, segment), torn);

    const second = switchable();
    const b = processorOn(second.sink, { dir });
    b.processor.start();
    expect(await b.processor.flush(Date.now() + 5000)).toBe(true);
    expect(second.state.got).toEqual(Array.from({ length: 10 }, (_, n) => n));
    expect(b.identity().spool).toMatchObject({ tornRecords: 1, replayed: 10 });
    expect(b.logs.join('\n')).toContain('1 torn record(s)');
  });

  it('refuses (drops, counted) what passes maxBytes, logs it once per episode, and keeps the spooled items intact', async () => {
    const { sink, state } = switchable();
    state.up = false;
    const { processor, logs, identity } = processorOn(sink, { dir: tempDir(), maxBytes: 8192, segmentBytes: 4096 }, { maxQueueSize: 5, maxBatchSize: 5 });
    processor.start();
    let refused = 0;
    for (let n = 0; n < 200; n++) if (!processor.enqueue(item(n))) refused++;
    const s = identity();
    expect(refused).toBeGreaterThan(0);
    expect(s.dropped).toBe(refused);
    expect(s.spool!.refused).toBe(refused);
    expect(logs.filter((m) => m.includes('is full'))).toHaveLength(1);
    const kept = 200 - refused;
    state.up = true;
    expect(await processor.flush(Date.now() + 5000)).toBe(true);
    expect(state.got).toEqual(Array.from({ length: kept }, (_, n) => n));
    // Room again: the next item is taken and the episode's end is logged.
    expect(processor.enqueue(item(999))).toBe(true);
    expect(logs.some((m) => m.includes('has room again'))).toBe(true);
    expect(await processor.flush(Date.now() + 5000)).toBe(true);
    expect(state.got.at(-1)).toBe(999);
  });

  it('acks items dead-lettered for cause (not retryable): they are not replayed', async () => {
    const dir = tempDir();
    const sink: DeferredSink = { name: 'refuses', write: async (batch) => ({ failed: batch.map((_, index) => ({ index, error: new Error('bad'), retryable: false })) }) };
    const a = processorOn(sink, { dir });
    a.processor.start();
    for (let n = 0; n < 5; n++) a.processor.enqueue(item(n));
    expect(await a.processor.flush(Date.now() + 2000)).toBe(true);
    expect(a.letters).toHaveLength(5);
    expect(a.identity().spool!.pending).toBe(0);
    await a.processor.spool!.close();
    const b = processorOn(switchable().sink, { dir });
    expect(b.identity().spool!.replayed).toBe(0);
  });

  it('one record that no longer checks out costs that record only: counted dead-lettered, the rest delivered in order before new items', async () => {
    const dir = tempDir();
    await leftBehind(dir, 20);
    const log = readdirSync(dir).find((f) => f.endsWith('.log') && readFileSync(join(dir, f)).length > 0)!;
    const { sink, state } = switchable();
    const b = processorOn(sink, { dir }, { maxQueueSize: 5, maxBatchSize: 5 });
    // Opened (20 counted), then a byte of record 8 flips on disk before it is read back.
    const bytes = readFileSync(join(dir, log));
    const frame = scanFrames(bytes).frames[7]!;
    bytes[frame.offset + frame.size - 3]! ^= 0xff;
    writeFileSync(join(dir, log), bytes);
    b.processor.start();
    for (let n = 100; n < 103; n++) b.processor.enqueue(item(n));
    expect(await b.processor.flush(Date.now() + 5000)).toBe(true);
    expect(state.got).toEqual([...Array.from({ length: 20 }, (_, n) => n).filter((n) => n !== 7), 100, 101, 102]);
    expect(b.identity()).toMatchObject({ accepted: 23, delivered: 22, deadLettered: 1, pending: 0 });
    expect(b.identity().spool).toMatchObject({ unreadable: 1, pending: 0, onDiskOnly: 0 });
  });

  it('a read of the backlog the disk refuses is neither an unhandled rejection nor a busy loop: reported, retried with a backoff, the items still pending', async () => {
    const dir = tempDir();
    await leftBehind(dir, 10);
    const { sink, state } = switchable();
    const b = processorOn(sink, { dir }, { maxBackoffMs: 100 });
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.log'))) unlinkSync(join(dir, f)); // the files vanish under us
    const reads = jest.spyOn(b.processor.spool!, 'pageIn');
    b.processor.start();
    await soon(350);
    expect(reads.mock.calls.length).toBeGreaterThanOrEqual(2); // retried…
    expect(reads.mock.calls.length).toBeLessThan(15); // …with a backoff, not in a loop
    expect(b.failures[0]).toMatch(/could not read 10 spooled item\(s\) back from .*ENOENT.*trying again in 100 ms/);
    expect(state.got).toEqual([]);
    expect(b.identity()).toMatchObject({ accepted: 10, pending: 10, deadLettered: 0 });
    expect(await b.processor.flush(Date.now() + 100)).toBe(false); // still owed
  });

  it('with requeue, an item that keeps failing goes to the back of the spool after maxAttempts tries instead of holding the others (never dead-lettered), and is delivered once it goes through', async () => {
    let poisoned = true;
    // Item 3 fails (retryable) while poisoned; the rest of each batch goes through.
    const { sink, got } = refusingOne('picky', 3, () => poisoned, 'upstream refuses 3');
    const { processor, letters, identity } = processorOn(sink, { dir: tempDir(), requeue: true }, { maxAttempts: 3, maxBatchSize: 4, maxQueueSize: 8 });
    processor.start();
    for (let n = 0; n < 6; n++) processor.enqueue(item(n));
    await soon(60);
    for (let n = 6; n < 30; n++) processor.enqueue(item(n));
    await soon(200);
    // Everything else went through, 3 went round the spool several times, nothing was dead-lettered.
    expect(got.filter((n) => n !== 3).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, n) => n).filter((n) => n !== 3));
    expect(letters).toEqual([]);
    const during = identity();
    expect(during).toMatchObject({ pending: 1, deadLettered: 0 });
    expect(during.spool!.requeued).toBeGreaterThanOrEqual(2);
    expect(during.spool!.pending).toBe(1);
    // Its age counts from when it was deferred (>= the 260 ms waited above), not from its last round.
    expect(during.spool!.oldestAgeMs).toBeGreaterThanOrEqual(250);
    expect(await processor.flush(Date.now() + 50)).toBe(false); // still owed: flush says so
    poisoned = false;
    expect(await processor.flush(Date.now() + 2000)).toBe(true);
    expect(got.filter((n) => n === 3)).toEqual([3]);
    expect(identity()).toMatchObject({ accepted: 30, delivered: 30, pending: 0, deadLettered: 0 });
    expect(identity().spool).toMatchObject({ pending: 0, onDiskOnly: 0 });
  });

  it('an outage writes nothing more while the items wait: each record stays in place through every round, its order kept, and is replayed in place after a restart', async () => {
    const dir = tempDir();
    const { sink, state } = switchable();
    state.up = false;
    const a = processorOn(sink, { dir, requeue: true }, { maxAttempts: 2, maxBatchSize: 4, maxQueueSize: 8 });
    a.processor.start();
    for (let n = 0; n < 20; n++) a.processor.enqueue(item(n));
    // The first round writes each record once and a mark per batch (see the replay tests below).
    while (a.identity().spool!.requeued < 20) await soon(5);
    const appendedBytes = a.identity().spool!.bytesWritten;
    expect(appendedBytes).toBeGreaterThan(0);
    // Several more rounds of every item through the back of the spool: nothing more is written.
    while (a.identity().spool!.requeued < 80) await soon(10);
    const during = a.identity();
    expect(during).toMatchObject({ pending: 20, deadLettered: 0 });
    expect(during.spool).toMatchObject({ pending: 20, appended: 20, bytesWritten: appendedBytes });
    const frames = readdirSync(dir).filter((f) => f.endsWith('.log')).flatMap((f) => scanFrames(readFileSync(join(dir, f))).frames);
    expect(frames).toHaveLength(20);
    // A restart replays each item once, in its place.
    await a.processor.spool!.close();
    open.splice(open.indexOf(a.processor), 1);
    const back = switchable();
    const b = processorOn(back.sink, { dir, requeue: true });
    b.processor.start();
    expect(await b.processor.flush(Date.now() + 2000)).toBe(true);
    expect(back.state.got).toEqual(Array.from({ length: 20 }, (_, n) => n));
  });

  it('an item sent to the back is read back after the items appended before it, ahead of those appended after', async () => {
    let refusing = true;
    const { sink, got } = refusingOne('order', 0, () => refusing, 'not yet');
    const { processor, identity } = processorOn(sink, { dir: tempDir(), requeue: true }, { maxAttempts: 2, maxBatchSize: 1, maxQueueSize: 1 });
    for (let n = 0; n < 4; n++) processor.enqueue(item(n));
    processor.start();
    while (identity().spool!.requeued < 1) await soon(1);
    refusing = false;
    for (let n = 4; n < 6; n++) processor.enqueue(item(n));
    expect(await processor.flush(Date.now() + 2000)).toBe(true);
    expect(got).toEqual([1, 2, 3, 0, 4, 5]);
  });

  it('after a crash, replay writes the same batches as the previous process did: the same items together (so the same Idempotency-Key), then the rest', async () => {
    const dir = tempDir();
    // Process A: a batch of 7 (lingered, below maxBatchSize) goes out and never returns (the crash
    // strikes mid-write); 5 more items queue behind it.
    const written: string[][] = [];
    const hanging: DeferredSink = { name: 'h', write: (batch) => { written.push(batch.map((i) => i.id!)); return new Promise(() => {}); } };
    const a = processorOn(hanging, { dir }, { maxBatchSize: 10, flushIntervalMs: 1 });
    a.processor.start();
    for (let n = 0; n < 7; n++) a.processor.enqueue(item(n));
    while (written.length === 0) await soon(2);
    for (let n = 7; n < 12; n++) a.processor.enqueue(item(n));
    await a.processor.spool!.close(); // what a kill -9 leaves: every record and mark written
    open.splice(open.indexOf(a.processor), 1);
    expect(written[0]).toHaveLength(7);

    // Process B: its first batch is those 7 items again, not the first 10 it replays.
    const batches: string[][] = [];
    const up: DeferredSink = { name: 'h', write: async (batch) => void batches.push(batch.map((i) => i.id!)) };
    const b = processorOn(up, { dir }, { maxBatchSize: 10 });
    b.processor.start();
    expect(await b.processor.flush(Date.now() + 2000)).toBe(true);
    expect(batches[0]).toEqual(written[0]);
    expect(batches.flat()).toHaveLength(12);
    expect(b.identity()).toMatchObject({ accepted: 12, delivered: 12, pending: 0 });
  });

  it('a second crash during the replay: the next process still writes the first batch as it went out', async () => {
    const dir = tempDir();
    const first: string[][] = [];
    const hang = (log: string[][]): DeferredSink => ({ name: 'h', write: (batch) => { log.push(batch.map((i) => i.id!)); return new Promise(() => {}); } });
    const a = processorOn(hang(first), { dir }, { maxBatchSize: 10, flushIntervalMs: 1 });
    a.processor.start();
    for (let n = 0; n < 4; n++) a.processor.enqueue(item(n));
    while (first.length === 0) await soon(2);
    for (let n = 4; n < 20; n++) a.processor.enqueue(item(n));
    await a.processor.spool!.close();
    open.splice(open.indexOf(a.processor), 1);
    const second: string[][] = [];
    const b = processorOn(hang(second), { dir }, { maxBatchSize: 10 });
    b.processor.start();
    while (second.length === 0) await soon(2);
    await b.processor.spool!.close();
    open.splice(open.indexOf(b.processor), 1);
    const third: string[][] = [];
    const c = processorOn({ name: 'h', write: async (batch) => void third.push(batch.map((i) => i.id!)) }, { dir }, { maxBatchSize: 10 });
    c.processor.start();
    expect(await c.processor.flush(Date.now() + 2000)).toBe(true);
    expect(second[0]).toEqual(first[0]);
    expect(third[0]).toEqual(first[0]);
    expect(third.flat()).toHaveLength(20);
  });
});
