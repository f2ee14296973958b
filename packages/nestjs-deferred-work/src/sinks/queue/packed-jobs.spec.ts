import type { JobItem } from '../../core/items/deferred-item.interface';
import type { SinkWriteResult } from '../../core/sink.interface';
import { BullSink } from '../bull/bull.sink';
import { BullMqSink } from '../bullmq/bullmq.sink';
import { isPackable, packedJobId, planPacking, unpackJob } from './packed-jobs';

const job = (id: string, name: string, opts?: JobItem['opts']): JobItem => ({ kind: 'job', queue: 'q', name, data: { id }, opts, when: 'always', createdAt: 0, id });
const pack = (name: string, data: unknown, jobId: string) => ({ name, data, jobId });
/** Every position of `xs` (the whole batch is the queue's share). */
const all = (xs: readonly unknown[]) => xs.map((_, i) => i);

describe('planPacking', () => {
  it('packs items without options of their own by name; items with options, and a name alone, go as their own job', () => {
    const items = [job('a', 'x'), job('b', 'y'), job('c', 'x', { priority: 2 }), job('d', 'x'), job('e', 'z'), job('f', 'z')];
    const own = items.map((item) => ({ own: item.id }));
    const plan = planPacking<unknown>(items, all(items), own, 100, pack);

    // in the order of each job's first item
    expect(plan.covers).toEqual([[0, 3], [1], [2], [4, 5]]);
    expect(plan.jobs[0]).toEqual({ name: 'x', data: { deferredWorkPacked: 1, items: [{ id: 'a', data: { id: 'a' } }, { id: 'd', data: { id: 'd' } }] }, jobId: packedJobId(['a', 'd']) });
    expect(plan.jobs[1]).toBe(own[1]);
    expect(plan.jobs[2]).toBe(own[2]);
    expect((plan.jobs[3] as { name: string }).name).toBe('z');
  });

  it('cuts a name’s items into full packs of maxItems, the rest in a last pack (alone: as its own job)', () => {
    const items = Array.from({ length: 11 }, (_, i) => job(`i${i}`, i % 2 === 0 ? 'even' : 'odd'));
    const plan = planPacking<unknown>(items, all(items), items, 3, pack);
    expect(plan.covers).toEqual([[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9]]);
    expect(plan.jobs[3]).toMatchObject({ name: 'odd', jobId: packedJobId(['i7', 'i9']) });
    const alone = planPacking<unknown>(items.slice(0, 7), all(items.slice(0, 7)), items.slice(0, 7), 3, pack);
    expect(alone.covers).toEqual([[0, 2, 4], [1, 3, 5], [6]]);
    expect(alone.jobs[2]).toBe(items[6]); // not a pack of one
  });

  it('keeps each item’s correlation in the pack', () => {
    const items = [{ ...job('a', 'x'), correlation: { requestId: 'r1' } }, job('b', 'x')];
    const plan = planPacking<unknown>(items, all(items), items, 100, pack);
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
    expect(() => BullMqSink.offloaded({ connection: 'redis://127.0.0.1:6379', queues: ['q'], packJobs: packJobs as never })).toThrow(
      /BullMqSink\.offloaded\(\): packJobs must be/,
    );
  });

  it('takes true, false and { maxItems }', () => {
    for (const packJobs of [true, false, { maxItems: 2 }, { maxItems: 10_000 }, {}]) expect(() => new BullMqSink({ packJobs })).not.toThrow();
  });
});

describe('a packing sink’s write', () => {
  /** A BullMQ queue stand-in: refuses the jobs named `refuse` (as Redis does, WRONGTYPE); a known jobId is a no-op, as in BullMQ. */
  const queue = (refuse: string) => {
    const added: Array<{ name: string; data: unknown; opts: { jobId: string } }> = [];
    const add = async (name: string, data: unknown, opts: { jobId: string }) => {
      if (name === refuse) throw new Error(`WRONGTYPE Operation against a key holding the wrong kind of value (${name})`);
      if (!added.some((job) => job.opts.jobId === opts.jobId)) added.push({ name, data, opts });
      return { id: opts.jobId };
    };
    const bulk = async (jobs: Array<{ name: string; data: unknown; opts: { jobId: string } }>) => Promise.all(jobs.map((j) => add(j.name, j.data, j.opts)));
    return { added, q: { name: 'q', waitUntilReady: async () => undefined, add, addBulk: bulk } };
  };
  const ctx = () => ({ signal: new AbortController().signal, attempt: 1 });

  it('fails exactly the items of a refused pack, at their batch indexes, with the reason; the other jobs are added', async () => {
    const { added, q } = queue('x');
    const sink = new BullMqSink({ queues: { q }, packJobs: true });
    const batch = [job('a', 'x'), job('b', 'y', { priority: 2 }), job('c', 'x'), job('d', 'x'), job('e', 'z'), job('f', 'z')];

    const result = (await sink.write(batch, ctx())) as SinkWriteResult;

    expect(result.failed!.map((f) => f.index)).toEqual([0, 2, 3]);
    for (const failure of result.failed!) expect(failure.error).toMatchObject({ message: expect.stringMatching(/WRONGTYPE/), code: 'WRONGTYPE', retryable: false });
    expect(added.map((j) => j.opts.jobId)).toEqual(['b', packedJobId(['e', 'f'])]);
  });

  it('sends many packs in adds of at most 32 jobs, every item once', async () => {
    const { added, q } = queue('none');
    let adds = 0;
    const counting = { ...q, addBulk: async (jobs: Parameters<typeof q.addBulk>[0]) => (adds++, q.addBulk(jobs)) };
    const sink = new BullMqSink({ queues: { q: counting }, packJobs: { maxItems: 2 } });
    const batch = Array.from({ length: 200 }, (_, i) => job(`i${i}`, 'x'));

    expect(await sink.write(batch, ctx())).toBeUndefined();
    expect(added).toHaveLength(100);
    expect(adds).toBe(4); // 100 packs: 32 + 32 + 32 + 4
    expect(added.flatMap((j) => unpackJob(j).map((item) => item.id))).toEqual(batch.map((item) => item.id));
  });
});
