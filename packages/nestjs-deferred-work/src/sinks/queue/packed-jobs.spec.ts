import type { JobItem } from '../../core/items/deferred-item.interface';
import { BullSink } from '../bull/bull.sink';
import { BullMqSink } from '../bullmq/bullmq.sink';
import { isPackable, packedJobId, planPacking, unpackJob } from './packed-jobs';

const job = (id: string, name: string, opts?: JobItem['opts']): JobItem => ({ kind: 'job', queue: 'q', name, data: { id }, opts, when: 'always', createdAt: 0, id });
const pack = (name: string, data: unknown, jobId: string) => ({ name, data, jobId });

describe('planPacking', () => {
  it('packs items without options of their own by name; items with options, and a name alone, go as their own job', () => {
    const items = [job('a', 'x'), job('b', 'y'), job('c', 'x', { priority: 2 }), job('d', 'x'), job('e', 'z'), job('f', 'z')];
    const own = items.map((item) => ({ own: item.id }));
    const plan = planPacking<unknown>(items, own, pack);

    expect(plan.covers).toEqual([[2], [0, 3], [1], [4, 5]]);
    expect(plan.jobs[0]).toBe(own[2]);
    expect(plan.jobs[1]).toEqual({ name: 'x', data: { deferredWorkPacked: 1, items: [{ id: 'a', data: { id: 'a' } }, { id: 'd', data: { id: 'd' } }] }, jobId: packedJobId(['a', 'd']) });
    expect(plan.jobs[2]).toBe(own[1]);
    expect((plan.jobs[3] as { name: string }).name).toBe('z');
  });

  it('keeps each item’s correlation in the pack', () => {
    const items = [{ ...job('a', 'x'), correlation: { requestId: 'r1' } }, job('b', 'x')];
    const plan = planPacking<unknown>(items, items, pack);
    expect((plan.jobs[0] as { data: unknown }).data).toEqual({ deferredWorkPacked: 1, items: [{ id: 'a', data: { id: 'a' }, correlation: { requestId: 'r1' } }, { id: 'b', data: { id: 'b' } }] });
  });
});

describe('packedJobId', () => {
  it('is the same for the same items and differs for others (a retried pack is added once, another set is not mistaken for it)', () => {
    expect(packedJobId(['a', 'b'])).toBe(packedJobId(['a', 'b']));
    expect(packedJobId(['a', 'b'])).not.toBe(packedJobId(['a', 'b', 'c']));
    expect(packedJobId(['a', 'b'])).not.toBe(packedJobId(['b', 'a']));
    expect(packedJobId(['a'])).toMatch(/^dw-pack-[0-9a-f]{40}$/); // no ':' (BullMQ refuses it in a jobId), not an integer
  });
});

describe('isPackable', () => {
  it('only an item with no job option set', () => {
    expect(isPackable(job('a', 'x'))).toBe(true);
    expect(isPackable(job('a', 'x', {}))).toBe(true);
    expect(isPackable(job('a', 'x', { delay: undefined }))).toBe(true);
    expect(isPackable(job('a', 'x', { delay: 10 }))).toBe(false);
    expect(isPackable(job('a', 'x', { jobId: 'mine' }))).toBe(false);
  });
});

describe('unpackJob', () => {
  it('returns a packed job’s items, and a one-item list for a job that was not packed', () => {
    const items = [{ id: 'a', data: 1 }, { id: 'b', data: 2 }];
    expect(unpackJob({ id: 'dw-pack-1', data: { deferredWorkPacked: 1, items } })).toBe(items);
    expect(unpackJob({ id: 'j1', data: { n: 1 }, opts: { correlation: { requestId: 'r' } } })).toEqual([{ id: 'j1', data: { n: 1 }, correlation: { requestId: 'r' } }]);
    expect(unpackJob({ id: 7, data: { items: [] } })).toEqual([{ id: '7', data: { items: [] } }]); // not marked: not a pack
  });
});

describe('the packJobs option', () => {
  it.each([{ maxItems: 1 }, { maxItems: 2.5 }, { maxItems: 20_000 }, 'yes'])('refuses %p, saying what it takes', (packJobs) => {
    expect(() => new BullMqSink({ packJobs: packJobs as never })).toThrow(/BullMqSink: packJobs must be true, false or \{ maxItems \} with maxItems a whole number from 2 to 10000/);
    expect(() => new BullSink({ packJobs: packJobs as never })).toThrow(/BullSink: packJobs must be/);
  });

  it('takes true, false and { maxItems }', () => {
    for (const packJobs of [true, false, { maxItems: 2 }, { maxItems: 10_000 }, {}]) expect(() => new BullMqSink({ packJobs })).not.toThrow();
  });
});
