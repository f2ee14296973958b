import type { JobItem } from '../../core/items/deferred-item.interface';
import type { SinkWriteResult } from '../../core/sink.interface';
import type { BullMqBulkJob } from './bullmq-sink.options';
import { BullMqSink } from './bullmq.sink';
import { sinkAttachContext } from '../../testing/sink-attach-context';

/** A BullMQ queue stand-in: adds jobs by id (a known id is a no-op, as in BullMQ), can fail part-way. */
class FakeQueue {
  readonly stored = new Map<string, BullMqBulkJob>();
  bulkCalls = 0;
  refuse = new Set<string>(); // job names Redis refuses
  orphans = new Set<string>(); // job names whose parent job is missing: BullMQ's code -5 (addBulk) or its error (add)
  reparented = new Set<string>(); // job names whose jobId exists under another parent: BullMQ's code -7
  codesAsText = false; // addBulk answers codes as text, as BullMQ 6's PostgreSQL backend does
  failBulkAfter: number | undefined; // addBulk stores this many jobs, then throws (a pipeline)
  hang = false; // add and addBulk never answer (a black-holed connection)
  status = 'ready';
  closing: Promise<void> | undefined;
  client: Promise<{ status: string }> = Promise.resolve(this as unknown as { status: string });

  constructor(readonly name: string) {}

  async waitUntilReady(): Promise<void> {}

  async addBulk(jobs: BullMqBulkJob[]): Promise<Array<{ id: string | number }>> {
    this.bulkCalls++;
    if (this.hang) return new Promise(() => undefined);
    const out: Array<{ id: string | number }> = [];
    for (const [i, job] of jobs.entries()) {
      if (this.failBulkAfter !== undefined && i >= this.failBulkAfter) throw new Error('pipeline: WRONGTYPE');
      const code = this.orphans.has(job.name) ? -5 : this.reparented.has(job.name) ? -7 : undefined;
      if (code !== undefined) out.push({ id: this.codesAsText ? String(code) : code });
      else out.push(await this.add(job.name, job.data, job.opts));
    }
    return out;
  }

  async add(name: string, data: unknown, opts: { jobId: string }): Promise<{ id: string }> {
    if (this.hang) return new Promise(() => undefined);
    if (this.refuse.has(name)) throw new Error(`WRONGTYPE for ${name}`);
    if (this.orphans.has(name)) throw Object.assign(new Error('Missing key for parent job bull:flows:gone. addJob'), { code: -5 });
    if (this.reparented.has(name)) throw Object.assign(new Error('The parent job bull:flows:other cannot be replaced. addJob'), { code: -7 });
    if (!this.stored.has(opts.jobId)) this.stored.set(opts.jobId, { name, data, opts });
    return { id: opts.jobId };
  }
}

const job = (queue: string, name: string, opts?: JobItem['opts']): JobItem => ({
  kind: 'job',
  queue,
  name,
  data: { name },
  opts,
  when: 'always',
  createdAt: Date.now(),
});
const ctx = () => ({ signal: new AbortController().signal, attempt: 1 });

describe('BullMqSink', () => {
  it('gives every job a stable id: the one given, or one derived once per item and reused on retries', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullMqSink({ queues: [mail as never] });
    const items = [job('mail', 'a'), job('mail', 'b', { jobId: 'order-7' })];
    await sink.write(items, ctx());
    await sink.write(items, ctx()); // a retry of the same items
    expect([...mail.stored.keys()]).toEqual([expect.stringMatching(/^dw-[0-9a-f-]{36}$/), 'order-7']);
    expect(mail.stored.size).toBe(2);
  });

  it("uses a spooled item's stable id as the jobId when the job has none; a given jobId wins", async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullMqSink({ queues: [mail as never] });
    await sink.write([{ ...job('mail', 'a'), id: 'dw-spooled-1' }, { ...job('mail', 'b', { jobId: 'order-8' }), id: 'dw-spooled-2' }], ctx());
    expect([...mail.stored.keys()]).toEqual(['dw-spooled-1', 'order-8']);
  });

  it("carries the item's correlation (request and trace ids) as job.opts.correlation, leaving the data as it was", async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullMqSink({ queues: [mail as never] });
    const item = { ...job('mail', 'a', { jobId: 'order-1' }), correlation: { requestId: 'req-1', traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) } };
    await sink.write([item], ctx());
    expect(mail.stored.get('order-1')).toEqual({
      name: 'a',
      data: { name: 'a' },
      opts: { jobId: 'order-1', correlation: { requestId: 'req-1', traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) } },
    });
  });

  it('when addBulk fails part-way with Redis up, adds the jobs one by one and reports only the refused one', async () => {
    const mail = new FakeQueue('mail');
    mail.failBulkAfter = 1;
    mail.refuse.add('poison');
    const sink = new BullMqSink({ queues: [mail as never] });
    const result = (await sink.write([job('mail', 'a'), job('mail', 'poison'), job('mail', 'c')], ctx())) as SinkWriteResult;
    expect(result.failed).toEqual([expect.objectContaining({ index: 1 })]);
    expect(String(result.failed![0].error)).toMatch(/BullMQ queue "mail": Redis refused job "poison" \(dw-.*\): WRONGTYPE for poison/);
    expect([...mail.stored.values()].map((j) => j.name)).toEqual(['a', 'c']); // 'a' was in Redis before; not added twice
  });

  it('sends a write of one or two jobs for a queue as single adds (a refusal is that job alone), and three or more as one addBulk', async () => {
    const mail = new FakeQueue('mail');
    mail.refuse.add('poison');
    const sink = new BullMqSink({ queues: [mail as never] });
    const result = (await sink.write([job('mail', 'a'), job('mail', 'poison')], ctx())) as SinkWriteResult;
    expect(mail.bulkCalls).toBe(0);
    expect(result.failed).toEqual([expect.objectContaining({ index: 1 })]);
    expect(String(result.failed![0].error)).toMatch(/Redis refused job "poison" \(dw-.*\): WRONGTYPE for poison/);
    expect([...mail.stored.values()].map((j) => j.name)).toEqual(['a']);
    await expect(sink.write([job('mail', 'b'), job('mail', 'c'), job('mail', 'd')], ctx())).resolves.toBeUndefined();
    expect(mail.bulkCalls).toBe(1);
    expect([...mail.stored.values()].map((j) => j.name)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a connected client with a socket: three or more jobs as single adds, not corked (no addBulk pipeline), each outcome its own', async () => {
    const mail = new FakeQueue('mail');
    mail.refuse.add('poison');
    const calls: string[] = [];
    Object.assign(mail, { stream: { cork: () => void calls.push('cork'), uncork: () => void calls.push('uncork') } });
    const add = mail.add.bind(mail);
    mail.add = async (name, data, opts) => {
      // as BullMQ does: its script command is issued a few microtasks after the call
      await Promise.resolve();
      await Promise.resolve();
      calls.push(`cmd ${name}`);
      return add(name, data, opts);
    };
    const sink = new BullMqSink({ queues: [mail as never] });
    await sink.write([job('mail', 'warm-up')], ctx()); // the client is known from now on
    calls.length = 0;
    const result = (await sink.write([job('mail', 'b'), job('mail', 'poison'), job('mail', 'd')], ctx())) as SinkWriteResult;
    expect(mail.bulkCalls).toBe(0);
    // each command sent as BullMQ issues it: the socket is never corked
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cmd b', 'cmd poison', 'cmd d']);
    expect(result.failed).toEqual([expect.objectContaining({ index: 1 })]);
    expect([...mail.stored.values()].map((j) => j.name)).toEqual(['warm-up', 'b', 'd']);
  });

  it('fails both single adds as retryable when an add fails and Redis is no longer up', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullMqSink({ queues: [mail as never] });
    await sink.write([job('mail', 'warm-up')], ctx()); // the client is known from now on
    mail.add = async () => {
      mail.status = 'reconnecting';
      throw new Error('Connection is closed.');
    };
    const result = (await sink.write([job('mail', 'a'), job('mail', 'b')], ctx())) as SinkWriteResult;
    expect(result.failed).toEqual([expect.objectContaining({ index: 0, retryable: true }), expect.objectContaining({ index: 1, retryable: true })]);
  });

  it('does not send while Redis is not connected, and says a closed queue is closed', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullMqSink({ queues: [mail as never] });
    mail.status = 'reconnecting';
    let result = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(result.failed).toEqual([expect.objectContaining({ index: 0, retryable: true })]);
    expect(String(result.failed![0].error)).toMatch(/Redis is not connected; not sending/);
    mail.client = new Promise(() => undefined); // still connecting: BullMQ resolves its client once connected
    mail.status = 'ready';
    result = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(result.failed).toEqual([expect.objectContaining({ retryable: true })]);
    mail.closing = Promise.resolve();
    result = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(result.failed).toEqual([expect.objectContaining({ retryable: false })]);
    expect(String(result.failed![0].error)).toMatch(/BullMQ queue "mail" is closed/);
    expect(mail.bulkCalls).toBe(0);
  });

  it('when the write is cut short, the queues that confirmed their jobs count as delivered; only the unconfirmed ones are retried', async () => {
    const mail = new FakeQueue('mail');
    const audit = new FakeQueue('audit');
    audit.hang = true;
    const sink = new BullMqSink({ queues: [mail as never, audit as never] });
    const controller = new AbortController();
    const writing = sink.write([job('mail', 'a'), job('audit', 'b'), job('mail', 'c')], { signal: controller.signal, attempt: 1 });
    await new Promise((r) => setTimeout(r, 20));
    const reason = new Error('write timed out after 2000 ms');
    controller.abort(reason);
    const result = (await writing) as SinkWriteResult;
    expect(result.failed).toEqual([{ index: 1, error: reason }]); // retryable (the default)
    expect(mail.stored.size).toBe(2);
  });

  it.each([
    [{ jobId: 'order:1' }, /contains ":", which BullMQ refuses.*"order-42"/],
    [{ jobId: '42' }, /is an integer, which BullMQ refuses; prefix it, e\.g\. "order-42"/],
    [{ priority: 1.5 }, /priority must be a whole number between 0 and 2097152/],
    [{ repeat: { every: 1000 } }, /upsertJobScheduler/],
    [{ debounce: { id: 'x' } }, /use "deduplication: \{ id \}"/],
    [{ deduplication: {} }, /deduplication needs an id/],
    [{ backoff: { type: 'fixed', delay: 1, jitter: 2 } }, /jitter must be between 0 and 1/],
    [{ failParentOnFailure: true, ignoreDependencyOnFailure: true }, /failParentOnFailure and ignoreDependencyOnFailure cannot be used together/],
    [{ deduplication: { id: 'd' }, parent: { id: 'p', queue: 'bull:flows' } }, /deduplication and parent cannot be used together/],
    [{ sizeLimit: 5 }, /the job's data is larger than its sizeLimit of 5 bytes/],
  ])('refuses %j with BullMQ’s own rules, saying how to fix it', (opts, message) => {
    const sink = new BullMqSink({ queues: [new FakeQueue('mail') as never] });
    expect(() => sink.validate(job('mail', 'a', opts))).toThrow(message);
  });

  it('sends a large batch as adds of at most 32 jobs, each started a turn of the event loop after the last, in order', async () => {
    let turn = 0;
    let writing = true;
    const tick = () => {
      turn++;
      if (writing) setImmediate(tick);
    };
    setImmediate(tick);
    const mail = new FakeQueue('mail');
    const calls: Array<{ size: number; turn: number }> = [];
    const addBulk = mail.addBulk.bind(mail);
    mail.addBulk = (jobs) => {
      calls.push({ size: jobs.length, turn });
      return addBulk(jobs);
    };
    const items = Array.from({ length: 100 }, (_, i) => job('mail', `j${i}`));
    try {
      await expect(new BullMqSink({ queues: [mail as never] }).write(items, ctx())).resolves.toBeUndefined();
    } finally {
      writing = false;
    }
    expect(calls.map((c) => c.size)).toEqual([32, 32, 32, 4]);
    for (let i = 1; i < calls.length; i++) expect(calls[i].turn).toBeGreaterThan(calls[i - 1].turn);
    expect([...mail.stored.values()].map((j) => j.name)).toEqual(items.map((i) => i.name));
  });

  it('keeps at most two adds of a part in flight, so the write signal gets only a few listeners', async () => {
    const mail = new FakeQueue('mail');
    let inFlight = 0;
    let most = 0;
    const addBulk = mail.addBulk.bind(mail);
    mail.addBulk = async (jobs) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      try {
        return await addBulk(jobs);
      } finally {
        inFlight--;
      }
    };
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const items = Array.from({ length: 512 }, (_, i) => job('mail', `j${i}`));
      await expect(new BullMqSink({ queues: [mail as never] }).write(items, ctx())).resolves.toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(mail.stored.size).toBe(512);
    expect(most).toBe(2);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('a refused job in one of the adds fails alone; the other adds are confirmed', async () => {
    const mail = new FakeQueue('mail');
    mail.refuse.add('j40');
    const items = Array.from({ length: 70 }, (_, i) => job('mail', `j${i}`));
    const result = (await new BullMqSink({ queues: [mail as never] }).write(items, ctx())) as SinkWriteResult;
    expect(result.failed!.map((f) => f.index)).toEqual([40]);
    expect(mail.stored.size).toBe(69);
  });

  it('a job BullMQ did not add is never counted added: a missing parent retried, a jobId under another parent dead-lettered, whether addBulk answered with a code or add threw', async () => {
    const mail = new FakeQueue('mail');
    mail.orphans.add('orphan');
    mail.reparented.add('taken');
    const sink = new BullMqSink({ queues: [mail as never] });
    const missing = expect.objectContaining({ retryable: true, code: 'ParentJobNotExist', message: expect.stringMatching(/BullMQ did not add job "orphan" \(dw-.*\): its parent job is not in Redis \(yet\).*"bull:orders"/) });
    const taken = expect.objectContaining({ retryable: false, code: 'ParentJobCannotBeReplaced', message: expect.stringMatching(/BullMQ did not add job "taken" .*another parent/) });
    const bulk = (await sink.write([job('mail', 'a'), job('mail', 'orphan'), job('mail', 'taken'), job('mail', 'c')], ctx())) as SinkWriteResult;
    expect(mail.bulkCalls).toBe(1);
    expect(bulk.failed).toEqual([expect.objectContaining({ index: 1, error: missing }), expect.objectContaining({ index: 2, error: taken })]);
    mail.codesAsText = true;
    const text = (await sink.write([job('mail', 'orphan'), job('mail', 'taken'), job('mail', 'e')], ctx())) as SinkWriteResult;
    expect(text.failed).toEqual([expect.objectContaining({ index: 0, error: missing }), expect.objectContaining({ index: 1, error: taken })]);
    const single = (await sink.write([job('mail', 'orphan'), job('mail', 'taken')], ctx())) as SinkWriteResult;
    expect(mail.bulkCalls).toBe(2);
    expect(single.failed).toEqual([expect.objectContaining({ index: 0, error: missing }), expect.objectContaining({ index: 1, error: taken })]);
    expect([...mail.stored.values()].map((j) => j.name)).toEqual(['a', 'c', 'e']);
  });

  it('refuses a parent that is not { id, queue: "<prefix>:<name>" } when the job is deferred', () => {
    const sink = new BullMqSink({ queues: [new FakeQueue('mail') as never] });
    expect(() => sink.validate(job('mail', 'x', { parent: { id: 'p-1', queue: 'orders' } } as never))).toThrow(/parent.queue must be the parent queue's qualified name.*"bull:orders".*got "orders"/);
    expect(() => sink.validate(job('mail', 'x', { parent: { queue: 'bull:orders' } } as never))).toThrow(/parent.id must be the parent job's id/);
    expect(() => sink.validate(job('mail', 'x', { parent: { id: 'p-1', queue: 'bull:orders' } } as never))).not.toThrow();
  });

  it('takes jobs only, and refuses Bull 4 queues naming the Bull sink', () => {
    const sink = new BullMqSink({ queues: [new FakeQueue('mail') as never] });
    expect(sink.kinds).toEqual(['job']);
    const bull4 = { name: 'mail', addBulk: async () => [] };
    expect(() => new BullMqSink({ queues: [bull4 as never] })).toThrow(/queues\[0\] is a Bull 4 queue \(@nestjs\/bull\); use BullSink from 'nestjs-deferred-work\/bull'/);
  });
});

describe('BullMqSink in an app that also has Bull 4 queues (both register BullQueue_<name>)', () => {
  /** What a Bull 4 queue looks like to the sink: addBulk, isReady, no waitUntilReady. */
  const bull4Queue = (name: string) => ({ name, addBulk: async () => [], isReady: async () => undefined, add: async () => ({}) });

  it('boots, passing over the Bull 4 queues; a job for one of them is refused naming BullSink', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullMqSink();
    await sink.attach(sinkAttachContext({ providers: { BullQueue_mail: mail, BullQueue_legacy: bull4Queue('legacy') } }));
    const job = (queue: string): JobItem => ({ kind: 'job', queue, name: 'n', data: {}, when: 'always', createdAt: 0, id: `dw-${queue}` });
    const result = (await sink.write([job('mail'), job('legacy')], { signal: new AbortController().signal, attempt: 1 })) as SinkWriteResult;
    expect(mail.stored.size).toBe(1);
    expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([[1, false]]);
    expect(String(result.failed![0].error)).toMatch(/queue "legacy" is a Bull 4 queue .*BullSink/);
  });

  it('with only Bull 4 queues registered, fails at bootstrap naming BullSink', async () => {
    const sink = new BullMqSink();
    await expect(Promise.resolve().then(() => sink.attach(sinkAttachContext({ providers: { BullQueue_legacy: bull4Queue('legacy') } })))).rejects.toThrow(
      /the queue registered as BullQueue_legacy is a Bull 4 queue/,
    );
  });
});
