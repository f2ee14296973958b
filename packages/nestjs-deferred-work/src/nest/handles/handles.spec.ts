import type { DeferredScope } from '../../capture/deferred-scope.interface';
import { DeferredLogger, toRecord } from './deferred-logger';
import { deferredMetric } from './deferred-metric.handle';
import { deferredQueue } from './deferred-queue.handle';
import { passthrough } from './passthrough';

/** A scope that records the calls made on it. */
function recordingScope() {
  const calls: Array<[string, ...unknown[]]> = [];
  const scope = {
    job: (...args: unknown[]) => (calls.push(['job', ...args]), `dw-job-${calls.length}`),
    log: (...args: unknown[]) => (calls.push(['log', ...args]), 'dw-log'),
    metric: (...args: unknown[]) => (calls.push(['metric', ...args]), 'dw-metric'),
    run: () => undefined,
  } as unknown as DeferredScope;
  return { scope, calls };
}

describe('passthrough', () => {
  class RealQueue {
    readonly #secret = 42;
    name = 'real';
    count() {
      return this.#secret;
    }
    onApplicationShutdown() {
      return 'closed';
    }
  }

  it("reads the real object's members, bound to it (private fields work), and keeps its class for instanceof", () => {
    const real = new RealQueue();
    const handle = passthrough<RealQueue>({ name: 'mail' }, () => real, () => new Error('missing'));
    expect(handle.name).toBe('mail');
    expect(handle.count()).toBe(42);
    expect(handle instanceof RealQueue).toBe(true);
  });

  it("never answers for Nest's lifecycle hooks (Nest would close the real object twice)", () => {
    const handle = passthrough<RealQueue>({}, () => new RealQueue(), () => new Error('missing'));
    expect(handle.onApplicationShutdown).toBeUndefined();
    expect('onApplicationShutdown' in handle).toBe(false);
  });

  it('without a real object, reading is harmless and calling says what is missing', () => {
    const handle = passthrough<{ count(): number }>({}, () => undefined, () => new Error('queue "mail" is not registered'));
    expect((handle as unknown as { constructor: unknown }).constructor).toBe(Object);
    expect((handle as unknown as { then?: unknown }).then).toBeUndefined();
    expect(() => handle.count()).toThrow('queue "mail" is not registered');
  });
});

describe('deferredQueue', () => {
  it("defers BullMQ's add(name, data, opts), Bull's add(data, opts) and addBulk, resolving with receipts", async () => {
    const { scope, calls } = recordingScope();
    const queue = deferredQueue<{
      add(...args: unknown[]): Promise<{ id: string }>;
      addBulk(jobs: unknown[]): Promise<Array<{ id: string }>>;
    }>('mail', () => scope, () => undefined);
    expect(await queue.add('welcome', { u: 1 }, { jobId: 'w-1', when: 'always' })).toEqual({
      id: 'w-1',
      name: 'welcome',
      data: { u: 1 },
      opts: { jobId: 'w-1' },
      queueName: 'mail',
      deferred: true,
    });
    expect((await queue.add({ u: 2 })).id).toBe('dw-job-2');
    expect((await queue.addBulk([{ name: 'a', data: 1 }, { data: 2 }])).map((r) => r.id)).toEqual(['dw-job-3', 'dw-job-4']);
    expect(calls.map((c) => c.slice(1, 3))).toEqual([
      ['mail', 'welcome'],
      ['mail', '__default__'],
      ['mail', 'a'],
      ['mail', '__default__'],
    ]);
  });
});

describe('deferredMetric', () => {
  const declared = (type: string) => () => ({ type, labelNames: ['channel', 'region'] });

  it('maps prom-client calls to metric items: inc/observe/set, labels by object or in declared order, timers in seconds', () => {
    const { scope, calls } = recordingScope();
    const counter = deferredMetric('orders', () => scope, declared('counter'));
    counter.inc();
    counter.inc(3);
    counter.inc({ channel: 'web' }, 2);
    counter.labels('app', 'EU').inc();
    const end = counter.startTimer({ channel: 'web' });
    const seconds = end({ region: 'EU' });
    expect(seconds).toBeGreaterThanOrEqual(0);
    expect(calls.map((c) => c.slice(1))).toEqual([
      ['orders', 1, undefined, undefined],
      ['orders', 3, undefined, undefined],
      ['orders', 2, { channel: 'web' }, undefined],
      ['orders', 1, { channel: 'app', region: 'EU' }, undefined],
      ['orders', seconds, { channel: 'web', region: 'EU' }, undefined],
    ]);
  });

  it("a gauge's inc and dec add to it (op 'add'); set sets it", () => {
    const { scope, calls } = recordingScope();
    const gauge = deferredMetric('inflight', () => scope, declared('gauge'));
    gauge.inc();
    gauge.dec(2);
    gauge.set(7);
    expect(calls.map((c) => [c[2], c[4]])).toEqual([
      [1, { op: 'add' }],
      [-2, { op: 'add' }],
      [7, undefined],
    ]);
  });

  it('positional labels need a declaration, and say so', () => {
    const { scope } = recordingScope();
    expect(() => deferredMetric('undeclared', () => scope, () => undefined).labels('web')).toThrow(/Pass the labels as an object/);
  });
});

describe('DeferredLogger', () => {
  it.each([
    [['log', 'placed', ['OrdersService']], { text: 'placed', fields: undefined, context: 'OrdersService' }],
    [['log', 'placed', [{ id: 1 }]], { text: 'placed', fields: { id: 1 }, context: 'Ctx' }],
    [['error', 'failed', ['Error: x\n    at y (z.js:1:1)', 'Other']], { text: 'failed', fields: { stack: 'Error: x\n    at y (z.js:1:1)' }, context: 'Other' }],
    [['error', 'failed', ['Error: x\n    at y (z.js:1:1)']], { text: 'failed', fields: { stack: 'Error: x\n    at y (z.js:1:1)' }, context: 'Ctx' }],
    [['warn', { message: 'slow', ms: 12 }, []], { text: 'slow', fields: { ms: 12 }, context: 'Ctx' }],
    [['log', 'a', [1, 'b', 'C2']], { text: 'a', fields: { args: [1, 'b'] }, context: 'C2' }],
  ])('reads a Nest-style call %j', ([level, message, params], expected) => {
    expect(toRecord(level as never, message, params as unknown[], 'Ctx')).toEqual(expected);
  });

  it('defers through its scope with its context; with no application running it writes at once through Nest', () => {
    const { scope, calls } = recordingScope();
    new DeferredLogger('OrdersService', () => scope).log('placed', { id: 7 });
    expect(calls).toEqual([['log', 'log', 'placed', { id: 7 }, { context: 'OrdersService' }]]);
    expect(() => new DeferredLogger('Nobody', () => undefined).warn('no app')).not.toThrow();
  });
});

describe('DeferredPinoLogger', () => {
  it("takes PinoLogger's calls: an object then a message, printf-style arguments, an error first", async () => {
    const { DeferredPinoLogger } = await import('./deferred-pino-logger');
    const { scope, calls } = recordingScope();
    const logger = new DeferredPinoLogger('OrdersService', () => scope);
    logger.info({ orderId: 'o-1' }, 'order %s placed', 'o-1');
    logger.debug('plain %d', 3);
    logger.error(new Error('boom'), 'failed');
    logger.trace('fine');
    expect(calls.map((c) => c.slice(1))).toEqual([
      ['info', 'order o-1 placed', { orderId: 'o-1' }, { context: 'OrdersService' }],
      ['debug', 'plain 3', undefined, { context: 'OrdersService' }],
      ['error', 'failed', { err: expect.objectContaining({ type: 'Error', message: 'boom' }) }, { context: 'OrdersService' }],
      ['verbose', 'fine', undefined, { context: 'OrdersService' }],
    ]);
  });
});
