import { MemorySink } from '../../sinks/memory/memory.sink';
import { CALLBACK_RUNNER_DEFAULTS } from '../../pipeline/callbacks/callback-runner.options';
import { PROCESSOR_DEFAULTS } from '../../pipeline/defaults';
import { configError } from '../../../../../test/support/config-error';
import { resolveOptions } from './resolve-options';

const sink = (name: string) => new MemorySink({ name });
/** A sink that takes jobs only, as the Bull sink does. */
const jobsOnly = (name: string) => Object.assign(new MemorySink({ name }), { kinds: ['job'] as const });


describe('resolveOptions', () => {
  it('defaults to one memory sink that takes every kind, plus the callback runner', () => {
    const resolved = resolveOptions();
    expect([...resolved.sinks.keys()]).toEqual(['memory']);
    expect(resolved.routing).toEqual({ job: 'memory', log: 'memory', metric: 'memory' });
    expect(resolved.processorOptions.get('memory')).toEqual(PROCESSOR_DEFAULTS);
    expect(resolved.processorOptions.has('callbacks')).toBe(false);
    expect(resolved.callbacks).toEqual(CALLBACK_RUNNER_DEFAULTS);
    expect(resolved.callbacks.maxAttempts).toBe(1);
    expect(resolved.when).toEqual({ job: 'success', callback: 'success', log: 'always', metric: 'always' });
    expect(resolved).toMatchObject({ asyncContext: false, shutdownTimeoutMs: 5000, drainOnSignal: true, maxItemBytes: 1_048_576 });
    expect(resolveOptions({ drainOnSignal: false }).drainOnSignal).toBe(false);
  });

  it('routes kinds to named sinks, the rest to routing.default or the first sink', () => {
    const resolved = resolveOptions({ sinks: [sink('a'), sink('b')], routing: { log: 'b' } });
    expect(resolved.routing).toEqual({ job: 'a', log: 'b', metric: 'a' });
    expect(resolveOptions({ sinks: [sink('a'), sink('b')], routing: { default: 'b' } }).routing.job).toBe('b');
  });

  it('takes the callback runner settings from callbacks, then the older sinkOptions.callbacks, never the globals', () => {
    const resolved = resolveOptions({
      writeTimeoutMs: 50,
      maxQueueSize: 600,
      callbacks: { concurrency: 4 },
      sinkOptions: { callbacks: { writeTimeoutMs: 700, maxAttempts: 2 } },
    });
    expect(resolved.callbacks).toEqual({ ...CALLBACK_RUNNER_DEFAULTS, concurrency: 4, timeoutMs: 700, maxAttempts: 2 });
    expect(resolveOptions({ callbacks: { timeoutMs: 9 }, sinkOptions: { callbacks: { writeTimeoutMs: 700 } } }).callbacks.timeoutMs).toBe(9);
  });

  it('without routing, sends each kind to the first sink that takes it', () => {
    expect(resolveOptions({ sinks: [jobsOnly('bull'), sink('memory')] }).routing).toEqual({ job: 'bull', log: 'memory', metric: 'memory' });
    expect(resolveOptions({ sinks: [jobsOnly('bull')] }).routing).toEqual({ job: 'bull', log: 'bull', metric: 'bull' }); // rejected per item, counted
  });

  it.each([
    [{ routing: { default: 'bull' } }, 'routing.default', /log items would go to sink "bull", which takes only job items. Route log items to a sink that takes them \("memory"\)/],
    [{ routing: { job: 'bull', metric: 'bull' } }, 'routing.metric', /metric items would go to sink "bull"/],
  ])('fails at bootstrap when %j routes a kind to a sink that does not take it', (routing, option, problem) => {
    const error = configError(() => resolveOptions({ sinks: [jobsOnly('bull'), sink('memory')], ...routing }));
    expect(error.option).toBe(option);
    expect(error.message).toMatch(problem);
  });

  it('layers defaults < globals < sink defaults < sinkOptions', () => {
    const custom = Object.assign(sink('c'), { defaults: { writeTimeoutMs: 111, maxAttempts: 2 } });
    const resolved = resolveOptions({
      sinks: [custom],
      maxAttempts: 9,
      maxBatchSize: 7,
      sinkOptions: { c: { maxAttempts: 3 } },
    });
    expect(resolved.processorOptions.get('c')).toMatchObject({ writeTimeoutMs: 111, maxAttempts: 3, maxBatchSize: 7 });
  });

  it.each([
    [{ maxQueueSize: -1 }, 'maxQueueSize', /whole number >= 1, got -1/],
    [{ maxBatchSize: 0 }, 'maxBatchSize', /whole number >= 1/],
    [{ flushIntervalMs: 1.5 }, 'flushIntervalMs', /whole number between 0 and 2147483647/],
    [{ writeTimeoutMs: 2 ** 31 }, 'writeTimeoutMs', /between 1 and 2147483647 \(the longest a timer can wait\), got 2147483648/],
    [{ routing: { job: 'callbacks' } }, 'routing.job', /built-in runner of run\(fn\) callbacks/],
    [{ deadLetter: 'callbacks' }, 'deadLetter', /built-in runner/],
    [{ shutdownTimeoutMs: '5s' }, 'shutdownTimeoutMs', /got "5s"/],
    [{ maxBatchSize: 10, maxQueueSize: 5 }, 'maxBatchSize', /larger than maxQueueSize/],
    [{ routing: { job: 'bull' } }, 'routing.job', /no sink is named "bull" \(configured: "memory"\)/],
    [{ routing: { jobs: 'memory' } }, 'routing.jobs', /not a kind/],
    [{ sinkOptions: { http: { maxAttempts: 2 } } }, 'sinkOptions.http', /no sink is named "http"/],
    [{ sinkOptions: { memory: { maxAttempts: 0 } } }, 'sinkOptions.memory.maxAttempts', /whole number >= 1/],
    [{ sinks: [sink('x'), sink('x')] }, 'sinks[1].name', /two sinks are named "x"/],
    [{ sinks: [sink('callbacks')] }, 'sinks[0].name', /reserved/],
    [{ sinks: [{ name: 'bad' }] }, 'sinks[0]', /not a sink/],
    [{ when: { job: 'sometimes' } }, 'when.job', /not a condition/],
    [{ deadLetter: 'nowhere' }, 'deadLetter', /no sink is named "nowhere"/],
    [{ callbacks: { concurrency: 0 } }, 'callbacks.concurrency', /whole number >= 1, got 0/],
    [{ callbacks: { timeoutMs: -5 } }, 'callbacks.timeoutMs', /between 1 and 2147483647/],
    [{ callbacks: { parallel: 4 } }, 'callbacks.parallel', /not an option of the callback runner/],
    [{ callbacks: 8 }, 'callbacks', /expected an object/],
    [{ drainOnSignal: 'yes' }, 'drainOnSignal', /must be true or false, got "yes"/],
  ])('rejects %j naming the option and the fix', (options, option, problem) => {
    const error = configError(() => resolveOptions(options as never));
    expect(error.option).toBe(option);
    expect(error.message).toMatch(problem);
    expect(error.message).toMatch(/^DeferredWorkModule: invalid option/);
  });
});
