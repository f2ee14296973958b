import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeadLetter } from '../../core/dead-letter.interface';
import type { DeadLetterRecord } from '../../core/dead-letter-store.interface';
import { recordBytes, recordOf } from './dead-letter-record';
import { FileDeadLetterStore } from './file-dead-letter.store';
import { MemoryDeadLetterStore } from './memory-dead-letter.store';

const big = { maxCount: 1000, maxBytes: 1 << 20, maxAgeMs: 3_600_000 };

function record(n: number, over: Partial<DeadLetter> = {}): DeadLetterRecord {
  const letter: DeadLetter = {
    item: { kind: 'job', id: `dw-${n}`, queue: 'q', name: 'j', data: { n }, createdAt: Date.now(), when: 'success' } as never,
    sink: n % 2 === 0 ? 'even' : 'odd',
    reason: 'attempts-exhausted',
    error: `failed ${n}`,
    code: '503',
    attempts: 2,
    at: Date.now(),
    ...over,
  };
  return recordOf(letter);
}

describe('MemoryDeadLetterStore', () => {
  it('keeps the first and last error, pages oldest first, filters, counts, discards and purges', () => {
    const store = new MemoryDeadLetterStore(big);
    const first = recordOf({ ...record(0), firstError: { message: 'first', code: 'E1', at: 1 } });
    expect(first).toMatchObject({ id: 'dw-0:even', firstError: { message: 'first', code: 'E1' }, lastError: { message: 'failed 0', code: '503' }, redrives: 0 });
    store.add([first, ...Array.from({ length: 9 }, (_, i) => record(i + 1))]);
    const page1 = store.list({ limit: 4 });
    expect(page1.records.map((r) => r.id)).toEqual(['dw-0:even', 'dw-1:odd', 'dw-2:even', 'dw-3:odd']);
    const page2 = store.list({ limit: 4, after: page1.next });
    const page3 = store.list({ limit: 4, after: page2.next });
    expect([...page2.records, ...page3.records].map((r) => r.item.id)).toEqual(['dw-4', 'dw-5', 'dw-6', 'dw-7', 'dw-8', 'dw-9']);
    expect(page3.next).toBeUndefined();
    expect(store.count({ sink: 'odd' })).toBe(5);
    expect(store.count({ reason: 'timeout' })).toBe(0);
    expect(store.list({ sink: 'even', limit: 2 }).records.map((r) => r.id)).toEqual(['dw-0:even', 'dw-2:even']);
    expect(store.remove(['dw-1:odd', 'missing'])).toBe(1);
    expect(store.get('dw-1:odd')).toBeUndefined();
    expect(store.purge({ sink: 'even' })).toBe(5);
    expect(store.count({})).toBe(4);
    expect(store.purge({})).toBe(4);
    expect(store.count({})).toBe(0);
  });

  it('holds its bounds: count, bytes and age, the oldest going first; a record with the same id replaces its older one', () => {
    const byCount = new MemoryDeadLetterStore({ ...big, maxCount: 3 });
    byCount.add(Array.from({ length: 5 }, (_, i) => record(i)));
    expect(byCount.list({}).records.map((r) => r.item.id)).toEqual(['dw-2', 'dw-3', 'dw-4']);
    byCount.add([record(2)]); // replaces dw-2, now the newest
    expect(byCount.list({}).records.map((r) => r.item.id)).toEqual(['dw-3', 'dw-4', 'dw-2']);

    const one = recordBytes(record(1));
    const byBytes = new MemoryDeadLetterStore({ ...big, maxBytes: one * 2 + 5 });
    byBytes.add(Array.from({ length: 4 }, (_, i) => record(i + 1)));
    expect(byBytes.count({})).toBe(2);

    const byAge = new MemoryDeadLetterStore({ ...big, maxAgeMs: 1000 });
    byAge.add([record(1, { at: Date.now() - 5000 }), record(2)]);
    expect(byAge.list({}).records.map((r) => r.item.id)).toEqual(['dw-2']);
  });
});

describe('FileDeadLetterStore', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'dw-dlq-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const open = (bounds = big) => {
    const store = new FileDeadLetterStore({ dir, ...bounds, maxRecordBytes: 4096, syncIntervalMs: 10 });
    store.open();
    return store;
  };

  it('reads back what was kept, without what was removed, replaced or evicted', async () => {
    const store = open({ ...big, maxCount: 4 });
    store.add(Array.from({ length: 5 }, (_, i) => record(i))); // dw-0 evicted
    store.remove(['dw-1:odd']);
    store.add([{ ...record(2), redrives: 1 }]); // replaces dw-2
    await store.close();

    const again = open({ ...big, maxCount: 4 });
    expect(again.list({}).records.map((r) => [r.id, r.redrives])).toEqual([
      ['dw-3:odd', 0],
      ['dw-4:even', 0],
      ['dw-2:even', 1],
    ]);
    expect(again.get('dw-3:odd')).toMatchObject({ sink: 'odd', reason: 'attempts-exhausted', attempts: 2, lastError: { message: 'failed 3', code: '503' } });
    expect(again.purge({})).toBe(3);
    await again.close();
    const empty = open();
    expect(empty.count({})).toBe(0);
    await empty.close();
  });

  it('is one process per directory, as a spool is', async () => {
    const store = open();
    expect(() => open()).toThrow(/lock|another process|in use/i);
    await store.close();
  });
});
