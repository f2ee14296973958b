/**
 * Reads what `perf script -F ip,sym` prints for a `perf record -e cpu-clock -g` of one thread of a
 * Node process started with `--perf-basic-prof-only-functions` (V8 names its JIT code
 * `JS:*name url:line:col` in `/tmp/perf-<pid>.map`), and splits the thread's CPU time by whose code
 * spent it.
 *
 * Unlike `--cpu-prof`, which samples wall time (a thread preempted on a busy machine is charged to
 * whatever it runs when it gets the core back), `cpu-clock` samples only while the thread runs: the
 * shares are shares of CPU time, and scaled by the thread's measured CPU time they are µs of CPU.
 * Each sample is charged to its leaf-most JavaScript frame's owner — the V8 builtins, runtime calls
 * and system calls a function makes count as that function's — or to `gc` / `native` when no
 * JavaScript is on the stack (garbage collection; libuv, epoll and Node's C++ between callbacks).
 *
 * V8 reuses the memory of code it dropped, and its map file only ever grows: perf resolves an address
 * to the first function ever placed there (a module loader's, say). {@link PerfMap} resolves it to
 * the latest instead, the code that was there while the thread was sampled after warm-up.
 */
import { type FrameGroup, frameGroup } from './cpuprofile-summary.js';

/** Who spent a sample: a frame group, or native code with no JavaScript frame on the stack. */
export type PerfOwner = Exclude<FrameGroup, 'idle' | 'v8 builtins'> | 'native';

export interface PerfFunction {
  name: string;
  /** `file:line`, shortened to the part after `node_modules/` or `dist/`. */
  where: string;
  group: FrameGroup;
  /** Samples whose stack holds this function (once per sample, however deep). */
  inclusive: number;
  /** Samples where it is the leaf-most JavaScript frame (native code and garbage collection it called included). */
  self: number;
}

export interface PerfSummary {
  samples: number;
  /** Samples charged to each owner (they add up to `samples`). */
  owners: Record<string, number>;
  /** Of those, samples whose leaf was in the kernel (system calls, page faults), per owner. */
  kernel: Record<string, number>;
  /** Samples whose stack holds any frame of each group (a sample counts once per group). */
  inclusive: Record<string, number>;
  /** JavaScript functions by inclusive samples, largest first. */
  functions: PerfFunction[];
}

interface JsFrame {
  name: string;
  url: string;
  line: number;
}

const JS_SYMBOL = /^JS:[*~^+-]?(\S*)\s+(\S+?):(\d+):\d+$/;

/** A V8 JIT symbol as a JavaScript frame; `undefined` for native code. */
function jsFrame(symbol: string): JsFrame | undefined {
  const match = JS_SYMBOL.exec(symbol);
  if (!match) return undefined;
  const [, name, url, line] = match;
  return { name: name || '(anonymous)', url: url.replace(/^file:\/\//, ''), line: Number(line) };
}

const GC_SYMBOL = /Heap::|Scavenger|MarkCompact|GCTracer|ConcurrentMarking|MinorMark|Sweeper/;
const KERNEL_DSO = '[kernel.kallsyms]';

function shortUrl(url: string): string {
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) return url.slice(i + 'node_modules/'.length);
  const d = url.lastIndexOf('/dist/');
  return d >= 0 ? url.slice(d + 1) : url;
}

/** A V8 perf map (`/tmp/perf-<pid>.map`: `start size name` in hex, in the order code was made). */
export class PerfMap {
  private readonly entries: Array<{ start: number; end: number; name: string; order: number }>;

  constructor(text: string) {
    this.entries = [];
    for (const line of text.split('\n')) {
      const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
      if (!match) continue;
      const start = Number.parseInt(match[1], 16);
      this.entries.push({ start, end: start + Number.parseInt(match[2], 16), name: match[3], order: this.entries.length });
    }
    this.entries.sort((a, b) => a.start - b.start);
  }

  /** The latest code placed over `ip`, or `undefined`. */
  resolve(ip: number): string | undefined {
    let lo = 0;
    let hi = this.entries.length - 1;
    let last = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.entries[mid].start <= ip) {
        last = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    let best: { name: string; order: number } | undefined;
    // code objects are far smaller than 1 MiB: no earlier entry can reach `ip`
    for (let i = last; i >= 0 && this.entries[i].start > ip - 0x100000; i--) {
      const entry = this.entries[i];
      if (entry.end > ip && (!best || entry.order > best.order)) best = entry;
    }
    return best?.name;
  }
}

/**
 * Splits `perf script -F ip,sym,dso` output into stacks (leaf first) of `[symbol, dso]`; frames in a
 * perf map are named by `map` when given.
 */
export function parsePerfScript(text: string, map?: PerfMap): Array<Array<[string, string]>> {
  const stacks: Array<Array<[string, string]>> = [];
  let current: Array<[string, string]> = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') {
      if (current.length > 0) stacks.push(current);
      current = [];
      continue;
    }
    // "<ip> <symbol> (<dso>)"; the symbol may hold spaces
    const match = /^([0-9a-f]+)\s+(.*?)(?:\s+\(([^()]*)\))?$/.exec(trimmed);
    if (!match) continue;
    const dso = match[3] ?? '';
    const symbol = map && /\/perf-\d+\.map$/.test(dso) ? (map.resolve(Number.parseInt(match[1], 16)) ?? match[2]) : match[2];
    current.push([symbol, dso]);
  }
  if (current.length > 0) stacks.push(current);
  return stacks;
}

export function summarisePerf(stacks: Array<Array<[string, string]>>): PerfSummary {
  const owners: Record<string, number> = {};
  const kernel: Record<string, number> = {};
  const inclusive: Record<string, number> = {};
  const functions = new Map<string, PerfFunction>();
  const add = (record: Record<string, number>, key: string) => {
    record[key] = (record[key] ?? 0) + 1;
  };
  for (const stack of stacks) {
    let owner: PerfOwner | undefined;
    let gc = false;
    const groups = new Set<string>();
    const seen = new Set<PerfFunction>();
    for (const [symbol] of stack) {
      const frame = jsFrame(symbol);
      if (!frame) {
        if (GC_SYMBOL.test(symbol)) gc = true;
        continue;
      }
      const group = frameGroup(frame.url, frame.name);
      const leaf = owner === undefined;
      owner ??= group as PerfOwner;
      groups.add(group);
      const key = `${frame.name}@${frame.url}:${frame.line}`;
      let fn = functions.get(key);
      if (!fn) functions.set(key, (fn = { name: frame.name, where: `${shortUrl(frame.url)}:${frame.line}`, group, inclusive: 0, self: 0 }));
      if (!seen.has(fn)) {
        seen.add(fn);
        fn.inclusive++;
      }
      if (leaf) fn.self++;
    }
    // a collection started by an allocation in JavaScript is that code's; one on its own is `gc`
    const charged = gc && owner === undefined ? 'gc' : (owner ?? 'native');
    add(owners, charged);
    if (stack[0]?.[1] === KERNEL_DSO) add(kernel, charged);
    if (gc) groups.add('gc');
    for (const group of groups) add(inclusive, group);
  }
  return { samples: stacks.length, owners, kernel, inclusive, functions: [...functions.values()].sort((a, b) => b.inclusive - a.inclusive) };
}
