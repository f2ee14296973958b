/**
 * Reads a V8 `.cpuprofile` (what `node --cpu-prof` writes) and sums the time of the samples taken in
 * a window — self time per group of code (this library, Nest, Express or Fastify, Node's timers, …)
 * and per function — so that a route's cost per request can be split by whose code spends it.
 */

/** The parts of a `.cpuprofile` read here. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  /** Monotonic µs, the same clock as `process.hrtime()`. */
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Whose code a frame is. The order of `GROUP_RULES` decides ties. */
export type FrameGroup =
  | 'deferred-work'
  | 'nest'
  | 'express'
  | 'fastify'
  | 'rxjs'
  | 'event-emitter'
  | 'sink clients'
  | 'bench-app'
  | 'node:timers'
  | 'node:http'
  | 'node:net+stream'
  | 'node:other'
  | 'v8 builtins'
  | 'gc'
  | 'other deps'
  | 'idle';

const GROUP_RULES: Array<[FrameGroup, (url: string, name: string) => boolean]> = [
  ['idle', (url, name) => url === '' && (name === '(idle)' || name === '(program)' || name === '(root)')],
  ['gc', (url, name) => url === '' && name === '(garbage collector)'],
  ['deferred-work', (url) => url.includes('/nestjs-deferred-work/')],
  ['event-emitter', (url) => url.includes('eventemitter2') || url.includes('@nestjs/event-emitter') || url.includes('@nestjs+event-emitter')],
  ['nest', (url) => url.includes('@nestjs/') || url.includes('@nestjs+')],
  ['rxjs', (url) => url.includes('/rxjs/')],
  ['fastify', (url) => /\/(fastify|find-my-way|avvio|light-my-request|fast-json-stringify|@fastify|fast-querystring|toad-cache|process-warning)[/@+]/.test(url)],
  ['express', (url) => /\/(express|router|body-parser|finalhandler|on-finished|send|serve-static|path-to-regexp|parseurl|qs|content-type|type-is|accepts|depd|etag|fresh|vary|statuses|mime-types|negotiator|cookie|http-errors|proxy-addr|encodeurl|escape-html|range-parser|content-disposition|merge-descriptors|utils-merge|setprototypeof|ee-first|forwarded|media-typer|raw-body|iconv-lite|destroy|unpipe|bytes|safe-buffer|debug|ms|call-bind|side-channel|object-inspect|get-intrinsic|has-symbols|es-errors|function-bind|hasown|gopd|dunder-proto|math-intrinsics|es-object-atoms|get-proto|call-bound|side-channel-\w+)[/@+]/.test(url)],
  ['sink clients', (url) => /\/(bull|bullmq|ioredis|msgpackr|cluster-key-slot|redis-errors|redis-parser|standard-as-callback|denque|cron-parser|amqplib|amqp-connection-manager|nats|mqtt|kafkajs)[/@+]/.test(url)],
  ['bench-app', (url) => url.includes('/benchmark-app/') || url.includes('/app/dist/')],
  ['node:timers', (url) => url === 'node:internal/timers' || url === 'node:timers' || url === 'node:internal/process/task_queues'],
  ['node:http', (url) => url.startsWith('node:_http') || url.startsWith('node:http') || url.startsWith('node:internal/http')],
  ['node:net+stream', (url) => url.startsWith('node:net') || url.startsWith('node:internal/streams') || url.startsWith('node:stream') || url.startsWith('node:internal/stream_base')],
  ['node:other', (url) => url.startsWith('node:')],
  ['v8 builtins', (url) => url === ''],
  ['other deps', () => true],
];

export function frameGroup(url: string, name: string): FrameGroup {
  for (const [group, test] of GROUP_RULES) if (test(url, name)) return group;
  return 'other deps';
}

/** A function's self time in the window, and its inclusive time (once per sample, however deep). */
export interface FunctionTime {
  name: string;
  /** `file:line`, shortened to the part after `node_modules/` or `dist/`. */
  where: string;
  group: FrameGroup;
  selfUs: number;
  totalUs: number;
}

export interface ProfileSummary {
  /** µs of samples inside the window (including idle). */
  windowUs: number;
  /** Self time per group, µs. */
  groups: Record<FrameGroup, number>;
  /** Every function seen in the window, by self time, largest first. */
  functions: FunctionTime[];
  /** Time under (inclusive of) the functions of each group, µs: a sample counts once per group. */
  groupsInclusive: Record<FrameGroup, number>;
}

function shortUrl(url: string): string {
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) return url.slice(i + 'node_modules/'.length);
  const d = url.lastIndexOf('/dist/');
  return d >= 0 ? url.slice(d + 1) : url.replace(/^file:\/\//, '');
}

/**
 * Sums the samples whose timestamp lies in `[fromUs, toUs]` (monotonic µs, as
 * `process.hrtime.bigint() / 1000n`); the whole profile when no window is given.
 */
export function summariseProfile(profile: CpuProfile, fromUs = -Infinity, toUs = Infinity): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const groups = Object.fromEntries(GROUP_RULES.map(([g]) => [g, 0])) as Record<FrameGroup, number>;
  const groupsInclusive = { ...groups };
  const functions = new Map<string, FunctionTime>();
  const fn = (id: number): FunctionTime => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const key = `${functionName}@${url}:${lineNumber}`;
    let entry = functions.get(key);
    if (!entry) {
      const name = functionName || '(anonymous)';
      entry = { name, where: `${shortUrl(url)}:${lineNumber + 1}`, group: frameGroup(url, name), selfUs: 0, totalUs: 0 };
      functions.set(key, entry);
    }
    return entry;
  };
  let t = profile.startTime;
  let windowUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    // a sample's time is the gap to the next one
    const dt = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1] : 0;
    if (t < fromUs || t > toUs || dt <= 0) continue;
    windowUs += dt;
    const leaf = fn(profile.samples[i]);
    leaf.selfUs += dt;
    groups[leaf.group] += dt;
    const seenFns = new Set<FunctionTime>();
    const seenGroups = new Set<FrameGroup>();
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const entry = fn(id);
      if (!seenFns.has(entry)) {
        seenFns.add(entry);
        entry.totalUs += dt;
      }
      if (!seenGroups.has(entry.group)) {
        seenGroups.add(entry.group);
        groupsInclusive[entry.group] += dt;
      }
    }
  }
  return { windowUs, groups, groupsInclusive, functions: [...functions.values()].sort((a, b) => b.selfUs - a.selfUs) };
}
