import { PerfMap, parsePerfScript, summarisePerf } from '../src/bench/perf-summary';

const MAP = [
  // made first at 0x1000: a module loader's function, dropped later
  '1000 100 JS:*read node:internal/modules/package_json_reader:48:14',
  '2000 80 JS:*open file:///app/node_modules/nestjs-deferred-work/dist/chunk-A.js:10:3',
  // V8 reused 0x1000..0x1040 for this one after warm-up
  '1000 40 JS:*emit node:events:471:17',
].join('\n');

/** `perf script -F ip,sym,dso` output: one stack per sample, leaf first, blank line between. */
const SCRIPT = [
  // the library's code, which called into a V8 builtin: the library's
  '\t  5f00 Builtins_LoadIC (/usr/bin/node)',
  '\t  2010 JS:*open file:///app/node_modules/nestjs-deferred-work/dist/chunk-A.js:10:3 (/tmp/perf-42.map)',
  '\t  3000 JS:*parserOnIncoming node:_http_server:1026:26 (/tmp/perf-42.map)',
  '',
  // perf names 0x1010 after the first code ever there; it is `emit` now
  '\t  1010 JS:*read node:internal/modules/package_json_reader:48:14 (/tmp/perf-42.map)',
  '\t  3000 JS:*parserOnIncoming node:_http_server:1026:26 (/tmp/perf-42.map)',
  '',
  // a system call made by Node's HTTP code
  '\tffffffff81000000 tcp_sendmsg ([kernel.kallsyms])',
  '\t  7000 __GI___writev (/usr/lib/x86_64-linux-gnu/libc.so.6)',
  '\t  3000 JS:*parserOnIncoming node:_http_server:1026:26 (/tmp/perf-42.map)',
  '',
  // a scavenge with no JavaScript on the stack, and the event loop waiting
  '\t  8000 v8::internal::Scavenger::ScavengeObject (/usr/bin/node)',
  '',
  '\t  9000 uv__io_poll (/usr/bin/node)',
  '',
].join('\n');

describe('PerfMap', () => {
  it('resolves an address to the latest code placed over it, not the first', () => {
    const map = new PerfMap(MAP);
    expect(map.resolve(0x1010)).toBe('JS:*emit node:events:471:17');
    // past the newer, shorter code: only the old entry covers it
    expect(map.resolve(0x1050)).toBe('JS:*read node:internal/modules/package_json_reader:48:14');
    expect(map.resolve(0x2000)).toBe('JS:*open file:///app/node_modules/nestjs-deferred-work/dist/chunk-A.js:10:3');
    expect(map.resolve(0x2080)).toBeUndefined();
    expect(map.resolve(0x500)).toBeUndefined();
  });
});

describe('summarisePerf', () => {
  const summary = summarisePerf(parsePerfScript(SCRIPT, new PerfMap(MAP)));

  it('charges each sample to its leaf-most JavaScript frame, builtins and system calls included', () => {
    expect(summary.samples).toBe(5);
    expect(summary.owners).toEqual({ 'deferred-work': 1, 'node:other': 1, 'node:http': 1, gc: 1, native: 1 });
    expect(summary.kernel).toEqual({ 'node:http': 1 });
    expect(summary.functions.map((f) => f.name)).toContain('emit');
    expect(summary.functions.map((f) => f.name)).not.toContain('read');
  });

  it('counts a group once per sample for inclusive time', () => {
    expect(summary.inclusive['node:http']).toBe(3);
    expect(summary.inclusive['deferred-work']).toBe(1);
    const open = summary.functions.find((f) => f.name === 'open');
    expect(open).toMatchObject({ group: 'deferred-work', inclusive: 1, where: 'nestjs-deferred-work/dist/chunk-A.js:10' });
  });

  it('uses perf\'s own names when no map is given', () => {
    const plain = summarisePerf(parsePerfScript(SCRIPT));
    expect(plain.owners['node:other']).toBe(1);
    expect(plain.functions.some((f) => f.name === 'read')).toBe(true);
  });
});
