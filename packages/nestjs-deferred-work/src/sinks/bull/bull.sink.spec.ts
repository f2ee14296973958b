import { jest } from '@jest/globals';
import { getQueueToken } from '@nestjs/bull';
import { SinkWriteError } from '../../core/errors/sink-write.error';
import type { JobItem, SinkItem } from '../../core/items/deferred-item.interface';
import type { SinkWriteResult } from '../../core/sink.interface';
import { BULL_SINK_DEFAULTS, type BullBulkJob, bullQueueToken, type ModuleRefLike } from './bull-sink.options';
import { BullSink } from './bull.sink';
import { sinkAttachContext } from '../../testing/sink-attach-context';

/** A stand-in for a Bull queue: records addBulk calls; `reply` decides what each call returns. */
class FakeQueue {
  calls: BullBulkJob[][] = [];
  client = { status: 'ready' };
  closing: unknown = undefined;
  reply: (jobs: BullBulkJob[]) => Promise<Array<{ id?: unknown } | null>> = async (jobs) =>
    jobs.map((_, i) => ({ id: String(this.calls.length * 1000 + i) }));

  constructor(readonly name: string) {}

  addBulk(jobs: BullBulkJob[]) {
    this.calls.push(jobs);
    return this.reply(jobs);
  }
}

const job = (queue: string, name: string, data: unknown = {}, opts?: JobItem['opts']): JobItem => ({
  kind: 'job',
  queue,
  name,
  data,
  opts,
  when: 'success',
  createdAt: 0,
});

const ctx = (signal = new AbortController().signal) => ({ signal, attempt: 1 });

/** A ModuleRef stand-in that knows providers by token, and throws like Nest for unknown ones. */
const moduleRefOf = (providers: Record<string, unknown>) => {
  const get = jest.fn((token: unknown) => {
    if (typeof token === 'string' && token in providers) return providers[token];
    throw new Error(`Nest could not find ${String(token)} element`);
  });
  return { get } as unknown as ModuleRefLike & { get: typeof get };
};

describe('BullSink', () => {
  it('is named "bull" and brings Redis-minded dispatcher defaults', () => {
    const sink = new BullSink({ queues: [new FakeQueue('mail')] });
    expect(sink.name).toBe('bull');
    expect(sink.defaults).toBe(BULL_SINK_DEFAULTS);
    expect(BULL_SINK_DEFAULTS.writeTimeoutMs).toBeLessThan(5000);
    expect(new BullSink({ name: 'jobs', queues: [new FakeQueue('mail')] }).name).toBe('jobs');
  });

  it('makes the same queue token as getQueueToken() of @nestjs/bull', () => {
    for (const name of ['mail', 'a:b', 'default', '']) expect(bullQueueToken(name)).toBe(getQueueToken(name));
  });

  it('refuses unusable options with a message that says what to pass', () => {
    expect(new BullSink().name).toBe('bull'); // no options: the queues the app registered
    expect(() => new BullSink(null as never)).toThrow(/options must be an object, got null/);
    expect(() => new BullSink({ name: '', queues: [new FakeQueue('q')] })).toThrow(/option "name" must be a non-empty string/);
    expect(() => new BullSink({ moduleRef: {} as never })).toThrow(/ModuleRef/);
    expect(() => new BullSink({ queues: { mail: {} as never } })).toThrow(/queues\.mail is not a Bull queue/);
    expect(() => new BullSink({ queues: [{ addBulk: () => Promise.resolve([]) } as never] })).toThrow(/has no name/);
    expect(() => new BullSink({ queues: [new FakeQueue('q')], queueToken: 'x' as never })).toThrow(/queueToken must be a function/);
  });

  it("uses a spooled item's stable id as the jobId when the job has none (Redis then keeps one copy after a replay); a given jobId wins", async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullSink({ queues: [mail] });
    const spooled = { ...job('mail', 'a', { n: 1 }), id: 'dw-1' };
    const own = { ...job('mail', 'b', { n: 2 }, { jobId: 'order-7', attempts: 2 }), id: 'dw-2' };
    await sink.write([spooled, own, job('mail', 'c')], ctx());
    expect(mail.calls[0]).toEqual([
      { name: 'a', data: { n: 1 }, opts: { jobId: 'dw-1' } },
      { name: 'b', data: { n: 2 }, opts: { jobId: 'order-7', attempts: 2 } },
      { name: 'c', data: {} },
    ]);
  });

  it('writes one addBulk per queue per batch, with names, data and options passed through', async () => {
    const mail = new FakeQueue('mail');
    const audit = new FakeQueue('audit');
    const sink = new BullSink({ queues: { mail, audit } });
    const opts = { attempts: 3, backoff: { type: 'exponential', delay: 10 }, delay: 5, jobId: 'j-1', removeOnComplete: true, priority: 2, lifo: true };
    const batch: SinkItem[] = [job('mail', 'a', { n: 1 }, opts), job('audit', 'b', { n: 2 }), job('mail', 'c', { n: 3 })];

    await expect(sink.write(batch, ctx())).resolves.toBeUndefined();

    expect(mail.calls).toEqual([
      [
        { name: 'a', data: { n: 1 }, opts },
        { name: 'c', data: { n: 3 } },
      ],
    ]);
    expect(audit.calls).toEqual([[{ name: 'b', data: { n: 2 } }]]);
    expect(mail.calls[0][0].opts).not.toBe(opts); // a copy: Bull may not alter the item
  });

  /** A queue whose client has a socket of its own (a connected ioredis `Redis`): its jobs go out as single adds. */
  class SocketQueue extends FakeQueue {
    override client: { status: string; stream?: unknown } = { status: 'ready', stream: { cork() {}, uncork() {} } };
    adds: BullBulkJob[] = [];
    refuse: (job: BullBulkJob) => Error | undefined = () => undefined;

    async add(name: string | undefined, data: unknown, opts?: object) {
      const added = { name: name!, data, ...(opts ? { opts: opts as BullBulkJob['opts'] } : {}) };
      this.adds.push(added);
      const refusal = this.refuse(added);
      if (refusal) throw refusal;
      return { id: String(this.adds.length) };
    }
  }

  it('through a client with a socket of its own, adds each job with queue.add (no MULTI), names, data and options passed through', async () => {
    const mail = new SocketQueue('mail');
    const sink = new BullSink({ queues: [mail] });
    const opts = { attempts: 3, jobId: 'j-1', priority: 2 };

    await expect(sink.write([job('mail', 'a', { n: 1 }, opts), job('mail', 'b', { n: 2 })], ctx())).resolves.toBeUndefined();

    expect(mail.calls).toEqual([]);
    expect(mail.adds).toEqual([
      { name: 'a', data: { n: 1 }, opts },
      { name: 'b', data: { n: 2 } },
    ]);
    expect(mail.adds[0].opts).not.toBe(opts);
  });

  it('refuses a job with repeat when it is deferred (validate), not only when its batch is written', () => {
    const sink = new BullSink({ queues: [new FakeQueue('mail')] });
    expect(() => sink.validate(job('mail', 'tick', {}, { repeat: { every: 1000 } } as JobItem['opts']))).toThrow(/has a "repeat" option, which Bull's addBulk ignores/);
    expect(() => sink.validate(job('mail', 'once'))).not.toThrow();
  });

  it('BullSink.offloaded() refuses the same on the request thread: a job with repeat, and a queue it was not given', () => {
    const sink = BullSink.offloaded({ redis: 'redis://127.0.0.1:6379', queues: ['mail'] });
    expect(() => sink.validate!(job('mail', 'tick', {}, { repeat: { every: 1000 } } as JobItem['opts']))).toThrow(/has a "repeat" option, which Bull's addBulk ignores/);
    expect(() => sink.validate!(job('other', 'once'))).toThrow('queue "other" is not one of the queues given to BullSink.offloaded()');
    expect(() => sink.validate!(job('mail', 'once'))).not.toThrow();
  });

  it('a write cut short keeps the adds that resolved: only the unanswered jobs fail', async () => {
    const mail = new SocketQueue('mail');
    const add = mail.add.bind(mail);
    mail.add = (name, data, opts) => (name === 'slow' ? new Promise(() => undefined) : add(name, data, opts)); // a reply that never comes
    const sink = new BullSink({ queues: [mail] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('write timed out')), 20);
    const result = (await sink.write([job('mail', 'a'), job('mail', 'slow'), job('mail', 'b'), job('mail', 'slow')], ctx(controller.signal))) as SinkWriteResult;
    expect(result.failed?.map((f) => f.index)).toEqual([1, 3]);
  });

  it('the adds of a piece not started when the signal aborted are not sent (a write of 40: 32, then 8 a turn later)', async () => {
    const mail = new SocketQueue('mail');
    const sink = new BullSink({ queues: [mail] });
    const controller = new AbortController();
    setImmediate(() => controller.abort(new Error('write timed out'))); // before the write's turn for its second piece
    const result = (await sink.write(Array.from({ length: 40 }, (_, i) => job('mail', `j${i}`)), ctx(controller.signal))) as SinkWriteResult;
    expect(mail.adds).toHaveLength(32);
    expect(result.failed?.map((f) => f.index)).toEqual(Array.from({ length: 8 }, (_, i) => 32 + i));
  });

  it("Redis's own refusal stays a refusal when the connection is down by the time the adds settled", async () => {
    const mail = new SocketQueue('mail');
    mail.refuse = (added) => {
      if (added.name !== 'wrong') return undefined;
      mail.client.status = 'reconnecting';
      return Object.assign(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), { name: 'ReplyError' });
    };
    const sink = new BullSink({ queues: [mail] });
    const result = (await sink.write([job('mail', 'a'), job('mail', 'wrong')], ctx())) as SinkWriteResult;
    expect(result.failed).toHaveLength(1);
    const failure = result.failed![0];
    expect([failure.index, (failure.error as SinkWriteError).retryable, (failure.error as SinkWriteError).code]).toEqual([1, false, 'WRONGTYPE']);
    expect(String(failure.error)).toMatch(/Redis refused job "wrong": WRONGTYPE/);
  });

  it('through single adds, fails only the jobs Redis refused, each by what its reply says', async () => {
    const mail = new SocketQueue('mail');
    mail.refuse = (added) =>
      added.name === 'wrong' ? new Error('WRONGTYPE Operation against a key holding the wrong kind of value') : added.name === 'lost' ? new Error('Connection is closed.') : undefined;
    const sink = new BullSink({ queues: [mail] });

    const result = (await sink.write([job('mail', 'a'), job('mail', 'wrong'), job('mail', 'b'), job('mail', 'lost')], ctx())) as SinkWriteResult;

    expect(mail.adds.map((added) => added.name)).toEqual(['a', 'wrong', 'b', 'lost']);
    expect(result.failed?.map((f) => [f.index, (f.error as SinkWriteError).retryable, (f.error as SinkWriteError).code])).toEqual([
      [1, false, 'WRONGTYPE'],
      [3, true, 'ENOTCONN'], // ioredis's codeless "Connection is closed."
    ]);
    expect(String(result.failed?.[0].error)).toMatch(/Bull queue "mail": Redis refused job "wrong": WRONGTYPE/);
  });

  it('through single adds, an add that failed because the connection broke or the queue closed meanwhile is not a refusal; the added jobs stay confirmed', async () => {
    for (const [status, retryable, message] of [
      ['reconnecting', true, /Bull queue "mail": the connection to Redis broke while adding job "b" \(Connection is closed\.\)\. Will retry\./],
      ['end', false, /Bull queue "mail" is closed; its jobs cannot be added/],
    ] as const) {
      const mail = new SocketQueue('mail');
      mail.refuse = (added) => {
        if (added.name !== 'b') return undefined;
        mail.client.status = status; // the add failed as the connection went
        return new Error('Connection is closed.');
      };
      const sink = new BullSink({ queues: [mail] });

      const result = (await sink.write([job('mail', 'a'), job('mail', 'b'), job('mail', 'c')], ctx())) as SinkWriteResult;

      expect(result.failed?.map((f) => [f.index, (f.error as SinkWriteError).retryable])).toEqual([[1, retryable]]);
      expect(String(result.failed?.[0].error)).toMatch(message);
    }
  });

  it('adds through addBulk when the queue has a default "repeat" (which queue.add would honour and addBulk ignores)', async () => {
    const mail = Object.assign(new SocketQueue('mail'), { defaultJobOptions: { repeat: { every: 1000 } } });
    await expect(new BullSink({ queues: [mail] }).write([job('mail', 'a')], ctx())).resolves.toBeUndefined();
    expect(mail.adds).toEqual([]);
    expect(mail.calls).toEqual([[{ name: 'a', data: {} }]]);
  });

  it('reports only the jobs addBulk returned without an id, by their index in the batch', async () => {
    const mail = new FakeQueue('mail');
    mail.reply = async (jobs) => jobs.map((_, i) => (i === 1 ? { id: null } : i === 2 ? null : { id: i + 1 }));
    const audit = new FakeQueue('audit');
    const sink = new BullSink({ queues: [mail, audit] });
    const batch = [job('mail', 'a'), job('audit', 'x'), job('mail', 'b'), job('mail', 'c'), job('mail', 'd')];

    const result = (await sink.write(batch, ctx())) as SinkWriteResult;

    expect(result.failed?.map((f) => f.index)).toEqual([2, 3]);
    expect(result.failed?.every((f) => f.retryable !== false)).toBe(true);
    expect(String(result.failed?.[0].error)).toMatch(/Redis refused to add job "b".*without an id/);
  });

  it('fails every job of a queue whose addBulk rejects (retryable), and delivers the other queues', async () => {
    const mail = new FakeQueue('mail');
    mail.reply = async () => {
      throw new Error('READONLY You can\'t write against a read only replica.');
    };
    const audit = new FakeQueue('audit');
    const sink = new BullSink({ queues: [mail, audit] });

    const result = (await sink.write([job('audit', 'x'), job('mail', 'a'), job('mail', 'b')], ctx())) as SinkWriteResult;

    expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(String(result.failed?.[0].error)).toMatch(/queue "mail": adding the jobs failed: READONLY/);
    expect(audit.calls).toHaveLength(1);
  });

  it('refuses items that are not jobs, and repeatable jobs, without retry', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullSink({ queues: [mail] });
    const log: SinkItem = { kind: 'log', level: 'info', message: 'm', when: 'always', createdAt: 0 };
    const metric: SinkItem = { kind: 'metric', name: 'n', value: 1, when: 'always', createdAt: 0 };

    const result = (await sink.write(
      [log, job('mail', 'ok'), metric, job('mail', 'cron', {}, { repeat: { cron: '* * * * *' } })],
      ctx(),
    )) as SinkWriteResult;

    expect(result.failed?.map((f) => [f.index, f.retryable])).toEqual([
      [0, false],
      [2, false],
      [3, false],
    ]);
    expect(String(result.failed?.[0].error)).toMatch(/takes jobs only, got a log item.*routing/);
    expect(String(result.failed?.[2].error)).toMatch(/"repeat" option.*queue\.add\(name, data, \{ repeat \}\)/);
    expect(mail.calls).toEqual([[{ name: 'ok', data: {} }]]);
  });

  it('finds registered queues through moduleRef by token, once, and names an unknown queue with the fix', async () => {
    const mail = new FakeQueue('mail');
    const moduleRef = moduleRefOf({ BullQueue_mail: mail });
    const sink = new BullSink({ moduleRef });

    const result = (await sink.write([job('mail', 'a'), job('nope', 'b'), job('mail', 'c')], ctx())) as SinkWriteResult;
    await sink.write([job('mail', 'd')], ctx());

    expect(result.failed).toHaveLength(1);
    expect(result.failed?.[0]).toMatchObject({ index: 1, retryable: false });
    expect(String(result.failed?.[0].error)).toMatch(
      /Bull queue "nope" is not registered \(no provider BullQueue_nope.*BullModule\.registerQueue\(\{ name: 'nope' \}\)/,
    );
    expect(moduleRef.get).toHaveBeenCalledWith('BullQueue_mail', { strict: false });
    expect(moduleRef.get.mock.calls.filter(([t]) => t === 'BullQueue_mail')).toHaveLength(1);
    expect(mail.calls.map((c) => c.map((j) => j.name))).toEqual([['a', 'c'], ['d']]);
  });

  it('uses a custom queueToken, and prefers given queues over moduleRef', async () => {
    const mail = new FakeQueue('mail');
    const direct = new FakeQueue('direct');
    const moduleRef = moduleRefOf({ 'queue:mail': mail });
    const sink = new BullSink({ moduleRef, queueToken: (n) => `queue:${n}`, queues: [direct] });

    await expect(sink.write([job('mail', 'a'), job('direct', 'b')], ctx())).resolves.toBeUndefined();
    expect(mail.calls).toHaveLength(1);
    expect(direct.calls).toHaveLength(1);
    expect(moduleRef.get).not.toHaveBeenCalledWith('queue:direct', expect.anything());
  });

  it('says which queues it knows when one is missing and the sink was never attached to an app', async () => {
    const sink = new BullSink({ queues: [new FakeQueue('mail')] });
    const result = (await sink.write([job('other', 'a')], ctx())) as SinkWriteResult;
    expect(String(result.failed?.[0].error)).toMatch(/no queue named "other" \(given: "mail"\).*queues: \{ 'other': queue \}/);
    expect(result.failed?.[0].retryable).toBe(false);
  });

  it('does not send while Redis is not connected (retryable), and refuses a closed queue (not retryable)', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullSink({ queues: [mail] });

    mail.client.status = 'reconnecting';
    const down = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(down.failed?.[0]).toMatchObject({ index: 0, retryable: true });
    expect(String(down.failed?.[0].error)).toMatch(/Redis is not connected; not sending/);

    mail.client.status = 'end';
    const ended = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(ended.failed?.[0]).toMatchObject({ index: 0, retryable: false });
    expect(String(ended.failed?.[0].error)).toMatch(/queue "mail" is closed/);

    mail.client.status = 'ready';
    mail.closing = Promise.resolve();
    const closing = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(closing.failed?.[0]).toMatchObject({ retryable: false });
    expect(mail.calls).toHaveLength(0);
  });

  it('treats an addBulk failure on a queue that closed meanwhile as not retryable', async () => {
    const mail = new FakeQueue('mail');
    mail.reply = async () => {
      mail.client.status = 'end';
      throw new Error('Connection is closed.');
    };
    const sink = new BullSink({ queues: [mail] });
    const result = (await sink.write([job('mail', 'a')], ctx())) as SinkWriteResult;
    expect(result.failed?.[0]).toMatchObject({ retryable: false });
  });

  it('when aborted while addBulk hangs, resolves at once with the unconfirmed jobs failed (retryable) by the signal reason, without an unhandled rejection later', async () => {
    const mail = new FakeQueue('mail');
    let fail: (e: Error) => void = () => undefined;
    mail.reply = () => new Promise((_, reject) => (fail = reject));
    const sink = new BullSink({ queues: [mail] });
    const controller = new AbortController();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const writing = sink.write([job('mail', 'a')], ctx(controller.signal));
      await new Promise((r) => setImmediate(r));
      const reason = new Error('write timed out');
      controller.abort(reason);
      await expect(writing).resolves.toEqual({ failed: [{ index: 0, error: reason }] });
      fail(new Error('late failure after the abort'));
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });

  it('does not call addBulk when the signal is already aborted', async () => {
    const mail = new FakeQueue('mail');
    const sink = new BullSink({ queues: [mail] });
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(sink.write([job('mail', 'a')], ctx(controller.signal))).rejects.toThrow('gone');
    expect(mail.calls).toHaveLength(0);
  });

  it('makes a resolved @nestjs/bull queue drain the library before it closes', async () => {
    const order: string[] = [];
    const mail = Object.assign(new FakeQueue('mail'), {
      onApplicationShutdown: jest.fn(function (this: unknown, _signal?: string) {
        order.push(this === mail ? 'close(queue)' : 'close(?)');
      }),
    });
    const drain = jest.fn(async () => void order.push('drain'));
    const sink = new BullSink();
    const context = sinkAttachContext({ drain, providers: {} });
    sink.attach({ ...context, resolve: (token) => (token === 'BullQueue_mail' ? mail : undefined) as never }); // registered, not listed among providers

    await sink.write([job('mail', 'a')], ctx());
    await sink.write([job('mail', 'b')], ctx()); // resolved once, wrapped once
    await mail.onApplicationShutdown('SIGTERM');

    expect(order).toEqual(['drain', 'close(queue)']);
    expect(drain).toHaveBeenCalledTimes(1);
  });

  it('holds every registered Bull queue and every given queue open from bootstrap, written to or not', async () => {
    const order: string[] = [];
    const hooked = (name: string) =>
      Object.assign(new FakeQueue(name), { onApplicationShutdown: jest.fn((_signal?: string) => void order.push(`close(${name})`)) });
    const cold = hooked('cold');
    const given = hooked('given');
    const other = hooked('other'); // a queue under a token that is not its Bull queue token: not ours
    const sink = new BullSink({ queues: [given] });
    sink.attach(
      sinkAttachContext({
        drain: async () => void order.push('drain'),
        providers: {
          BullQueue_cold: cold,
          SomethingElse: other,
          BullQueue_x: { name: 'x' }, // not a queue
          // A strict proxy provider (nestjs-cls) throws on any property access outside its context.
          Strict: new Proxy({}, { get: () => { throw new Error('outside a CLS context'); } }),
        },
      }),
    );

    await cold.onApplicationShutdown('SIGTERM');
    await given.onApplicationShutdown('SIGTERM');
    await other.onApplicationShutdown('SIGTERM');

    expect(order).toEqual(['drain', 'close(cold)', 'drain', 'close(given)', 'close(other)']);
    expect(cold.calls).toHaveLength(0); // held without a single write
  });

  it('still closes the queue when the sink was never attached, and leaves queues alone when told to', async () => {
    const close = jest.fn();
    const mail = Object.assign(new FakeQueue('mail'), { onApplicationShutdown: close });
    await new BullSink({ moduleRef: moduleRefOf({ BullQueue_mail: mail }) }).write([job('mail', 'a')], ctx());
    await mail.onApplicationShutdown();
    expect(close).toHaveBeenCalledTimes(1);

    const untouched = jest.fn();
    const audit = Object.assign(new FakeQueue('audit'), { onApplicationShutdown: untouched });
    const sink = new BullSink({ drainBeforeQueueClose: false });
    sink.attach(sinkAttachContext({ providers: { BullQueue_audit: audit } }));
    await sink.write([job('audit', 'a')], ctx());
    expect(audit.onApplicationShutdown).toBe(untouched);
  });

  it('throws SinkWriteError instances for per-item failures (what the dispatcher logs)', async () => {
    const sink = new BullSink({ queues: [new FakeQueue('mail')] });
    const result = (await sink.write([job('x', 'a')], ctx())) as SinkWriteResult;
    expect(result.failed?.[0].error).toBeInstanceOf(SinkWriteError);
  });
});
