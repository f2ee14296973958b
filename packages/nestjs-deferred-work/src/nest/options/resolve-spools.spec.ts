import { resolve } from 'node:path';
import { BullSink } from '../../sinks/bull/bull.sink';
import { MemorySink } from '../../sinks/memory/memory.sink';
import { SPOOL_DEFAULTS } from '../../spool';
import { configError } from '../../../../../test/support/config-error';
import { resolveOptions } from './resolve-options';

const sinks = [new MemorySink({ name: 'a' }), new MemorySink({ name: 'b/../x' })];


describe('the spool option', () => {
  it('is off by default: no spool, maxAttempts as configured', () => {
    const resolved = resolveOptions({ sinks });
    expect(resolved.spools?.size).toBe(0);
    expect(resolved.processorOptions.get('a')!.maxAttempts).toBe(Number.POSITIVE_INFINITY);
  });

  it('module-wide: each sink in its own subdirectory named after it (made safe as one path segment), defaults applied', () => {
    const resolved = resolveOptions({ sinks, spool: { dir: '/var/spool/app', syncIntervalMs: 50 } });
    expect(resolved.spools?.get('a')).toEqual({ ...SPOOL_DEFAULTS, syncIntervalMs: 50, dir: '/var/spool/app/a', requeue: true, source: { option: 'spool.dir', given: '/var/spool/app' } });
    expect(resolved.spools?.get('b/../x')!.dir).toBe('/var/spool/app/b%2F..%2Fx');
  });

  it('per sink: its own directory as given, over the module-wide one; false leaves a sink out', () => {
    const resolved = resolveOptions({ sinks, spool: { dir: 'spool' }, sinkOptions: { a: { spool: { dir: 'only-a', maxBytes: 4 << 20 } }, 'b/../x': { spool: false } } });
    // segmentBytes left out: 8 MiB, or maxBytes when smaller.
    expect(resolved.spools?.get('a')).toEqual({ ...SPOOL_DEFAULTS, maxBytes: 4 << 20, segmentBytes: 4 << 20, dir: resolve('only-a'), requeue: true, source: { option: 'sinkOptions.a.spool.dir', given: 'only-a' } });
    expect(resolved.spools?.has('b/../x')).toBe(false);
  });

  it('a spooled sink sends an item that used up its attempts to the back of the spool, unless the user sets maxAttempts (globally or for it)', () => {
    const requeue = (options: Parameters<typeof resolveOptions>[0], name: string) => resolveOptions(options).spools?.get(name)?.requeue;
    expect(requeue({ sinks, spool: { dir: 's' } }, 'a')).toBe(true);
    expect(requeue({ sinks, spool: { dir: 's' }, maxAttempts: 3 }, 'a')).toBe(false);
    expect(requeue({ sinks, spool: { dir: 's' }, sinkOptions: { a: { maxAttempts: 7 } } }, 'a')).toBe(false);
    // maxAttempts itself is unchanged (no cap): an item goes to the back once its retry budget is spent.
    expect(resolveOptions({ sinks, spool: { dir: 's' } }).processorOptions.get('a')!.maxAttempts).toBe(Number.POSITIVE_INFINITY);
    // A sink's own default is not the user's choice: it still requeues.
    const own = Object.assign(new MemorySink({ name: 'own' }), { defaults: { maxAttempts: 2, initialBackoffMs: 50 } });
    expect(requeue({ sinks: [own], spool: { dir: 's' } }, 'own')).toBe(true);
    expect(resolveOptions({ sinks: [own], spool: { dir: 's' } }).processorOptions.get('own')).toMatchObject({ maxAttempts: 2, initialBackoffMs: 50 });
    expect(requeue({ sinks: [own], spool: { dir: 's' }, sinkOptions: { own: { maxAttempts: 4 } } }, 'own')).toBe(false);
    const bull = new BullSink({ queues: { mail: { addBulk: async () => [] } as never } });
    expect(bull.defaults.maxAttempts).toBeUndefined(); // no cap of its own: the time budget ends retries
    expect(requeue({ sinks: [bull], spool: { dir: 's' } }, 'bull')).toBe(true);
  });

  it('refuses a spool without a dir, bad numbers, two sinks in one directory and segments too small for an item, saying how to fix it', () => {
    expect(configError(() => resolveOptions({ sinks, spool: {} as never })).message).toMatch(/spool.*non-empty dir.*\/var\/lib\/my-app\/spool/s);
    expect(configError(() => resolveOptions({ sinks, sinkOptions: { a: { spool: { dir: '' } } } })).message).toContain('sinkOptions.a.spool');
    expect(configError(() => resolveOptions({ sinks, spool: { dir: 's', syncIntervalMs: -1 } })).message).toContain('spool.syncIntervalMs');
    expect(configError(() => resolveOptions({ sinks, sinkOptions: { a: { spool: { dir: 's', maxBytes: 10 } } } })).message).toContain('sinkOptions.a.spool.maxBytes');
    const shared = configError(() => resolveOptions({ sinks, sinkOptions: { a: { spool: { dir: 'same' } }, 'b/../x': { spool: { dir: 'same' } } } }));
    expect(shared.message).toMatch(/"a" and "b\/\.\.\/x" would share the spool directory/);
    const small = configError(() => resolveOptions({ sinks, spool: { dir: 's', segmentBytes: 512 * 1024, maxBytes: 1 << 20 } }));
    expect(small.message).toMatch(/spool\.segmentBytes.*maxItemBytes/s);
    expect(resolveOptions({ sinks, maxItemBytes: 1000, spool: { dir: 's', segmentBytes: 20_000 } }).spools?.size).toBe(2);
    // A small maxBytes with segmentBytes left out: names maxBytes (what the user set), never segmentBytes.
    const tiny = configError(() => resolveOptions({ sinks, sinkOptions: { a: { spool: { dir: 's', maxBytes: 512 * 1024 } } } }));
    expect(tiny.message).toMatch(/sinkOptions\.a\.spool\.maxBytes.*524288 bytes cannot hold an item of maxItemBytes \(1048576\).*at least maxItemBytes \+ 16384 \(1064960\).*lower maxItemBytes to at most maxBytes - 16384 \(507904\)/s);
    expect(tiny.message).not.toContain('segmentBytes');
    expect(resolveOptions({ sinks, maxItemBytes: 64 * 1024, spool: { dir: 's', maxBytes: 512 * 1024 } }).spools?.get('a')).toMatchObject({ maxBytes: 512 * 1024, segmentBytes: 512 * 1024 });
  });
});
