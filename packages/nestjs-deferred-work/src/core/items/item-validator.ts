import { DeferredItemRejectedError } from '../errors/deferred-item-rejected.error';
import type { DeferredItem } from './deferred-item.interface';
import { isRunWhen } from './item-kinds';

const LEVELS = new Set(['fatal', 'error', 'warn', 'log', 'info', 'debug', 'verbose']);

/** A short, log-safe description of an item (never its payload). */
export function describeItem(item: DeferredItem): string {
  switch (item.kind) {
    case 'job':
      return `job "${String(item.name)}" on queue "${String(item.queue)}"`;
    case 'log':
      return `log record "${String(item.message).slice(0, 60)}"`;
    case 'metric':
      return `metric "${String(item.name)}"`;
    default:
      return 'callback';
  }
}

/** Nodes and depth the quick walk looks at before it leaves the answer to `JSON.stringify`. */
const QUICK_NODES = 64;
const QUICK_DEPTH = 6;

/** Nodes the walk may still visit; module-level so that a walk allocates nothing (saved and restored around each walk, so a getter that defers an item cannot disturb the outer one). */
let nodesLeft = 0;
/** The walk's estimate of the serialised size (ASCII text assumed: what the byte budgets count), beside its bound. */
let approx = 0;

/** `quickSizeBound`'s walk: a plain recursive function (no closure allocated per call). */
function boundOf(v: unknown, depth: number): number {
  if (--nodesLeft < 0) return -1;
  switch (typeof v) {
    case 'string':
      approx += 2 + v.length;
      return 2 + 6 * v.length;
    case 'number':
      approx += 8;
      return 24;
    case 'boolean':
      approx += 5;
      return 5;
    case 'undefined':
    case 'function':
    case 'symbol':
      return 4; // omitted in objects, null in arrays
    case 'bigint':
      return -1;
  }
  if (v === null) {
    approx += 4;
    return 4;
  }
  if (depth >= QUICK_DEPTH || typeof (v as { toJSON?: unknown }).toJSON === 'function') return -1;
  let size = 2;
  approx += 2;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const s = boundOf(v[i], depth + 1);
      if (s < 0) return -1;
      size += s + 1;
      approx += 1;
    }
    return size;
  }
  for (const key in v as Record<string, unknown>) {
    if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
    const s = boundOf((v as Record<string, unknown>)[key], depth + 1);
    if (s < 0) return -1;
    size += 6 * key.length + 4 + s;
    approx += key.length + 4;
  }
  return size;
}

/**
 * An upper bound of `JSON.stringify(value)`'s UTF-8 size, found without serialising: strings count
 * 6 bytes per UTF-16 unit (a `\uXXXX` escape), numbers 24. Returns -1 when a cheap walk cannot
 * tell — a `BigInt`, a `toJSON` (dates), too many nodes or too deep (cycles end up here) — and the
 * caller falls back to `JSON.stringify`, which then also produces the exact error.
 */
export function quickSizeBound(value: unknown): number {
  const outer = nodesLeft;
  const outerApprox = approx;
  nodesLeft = QUICK_NODES;
  approx = 0;
  try {
    const bound = boundOf(value, 0);
    lastEstimate = approx;
    return bound;
  } catch {
    return -1; // a throwing getter or proxy: let JSON.stringify report it
  } finally {
    nodesLeft = outer;
    approx = outerApprox;
  }
}

/** The estimate of the last walk `quickSizeBound` finished (read right after it). */
let lastEstimate = 0;

/**
 * Serialised size in bytes, or an upper bound of it when that is already within `maxItemBytes`
 * (the common case, without serialising); exact when it could matter.
 */
function payloadBytes(item: DeferredItem, what: string, payload: unknown, maxItemBytes: number): number {
  if (payload === undefined) return 0;
  const bound = quickSizeBound(payload);
  // At most two payloads per item (job data and options): each within half the limit cannot exceed it.
  if (bound >= 0 && bound * 2 <= maxItemBytes) {
    estimated += lastEstimate;
    return bound;
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(payload);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new DeferredItemRejectedError(
      describeItem(item),
      `its ${what} cannot be serialised to JSON (${reason})`,
      'Pass plain data: no circular references, no BigInt (convert it to a string), no class instances with cycles',
    );
  }
  if (json === undefined) return 0;
  const bytes = json.length * 3 <= maxItemBytes ? json.length : Buffer.byteLength(json);
  estimated += bytes;
  return bytes;
}

/** What `validateItem` estimates of the payloads it checks (module-level: a validation allocates nothing). */
let estimated = 0;

/**
 * Checks an item before it is accepted; throws `DeferredItemRejectedError` saying what is wrong
 * and how to fix it. `maxItemBytes` caps the serialised payload (job data, log fields, metric tags).
 * Returns an estimate of the payload's serialised size in bytes (exact when it was serialised; text
 * counted as ASCII otherwise): what the sinks' byte budgets count. 0 for a callback.
 */
export function validateItem(item: DeferredItem, maxItemBytes: number): number {
  const outer = estimated;
  estimated = 0;
  try {
    checkItem(item, maxItemBytes);
    return estimated;
  } finally {
    estimated = outer;
  }
}

/** An estimate of an item's payload size, as `validateItem` gives it, for an item accepted before (a redrive). Never throws. */
export function estimatePayloadBytes(item: DeferredItem): number {
  try {
    return validateItem(item, Number.MAX_SAFE_INTEGER);
  } catch {
    return 0;
  }
}

function checkItem(item: DeferredItem, maxItemBytes: number): void {
  if (!isRunWhen(item.when)) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `"${String(item.when)}" is not a condition`,
      'Pass { when: "success" | "failure" | "always" }, or leave it out for the default',
    );
  }
  let bytes = 0;
  switch (item.kind) {
    case 'job':
      if (typeof item.queue !== 'string' || item.queue === '' || typeof item.name !== 'string') {
        throw new DeferredItemRejectedError(
          describeItem(item),
          'a job needs a non-empty queue name and a job name (strings)',
          'Call job("queue", "name", data)',
        );
      }
      bytes = payloadBytes(item, 'data', item.data, maxItemBytes) + payloadBytes(item, 'options', item.opts, maxItemBytes);
      break;
    case 'log':
      if (!LEVELS.has(item.level) || typeof item.message !== 'string') {
        throw new DeferredItemRejectedError(
          describeItem(item),
          `a log record needs a level (${[...LEVELS].join(', ')}) and a string message`,
          'Call log("info", "message", { ...fields })',
        );
      }
      bytes = payloadBytes(item, 'fields', item.fields, maxItemBytes);
      break;
    case 'metric':
      if (typeof item.name !== 'string' || item.name === '' || typeof item.value !== 'number' || !Number.isFinite(item.value)) {
        throw new DeferredItemRejectedError(
          describeItem(item),
          `a metric needs a non-empty name and a finite number value (got ${String(item.value)})`,
          'Call metric("name", 42, { tag: "value" })',
        );
      }
      bytes = payloadBytes(item, 'tags', item.tags, maxItemBytes);
      break;
    case 'callback':
      if (typeof item.fn !== 'function') {
        throw new DeferredItemRejectedError('callback', 'run() needs a function', 'Call run(async (signal) => { ... })');
      }
      return;
    default:
      throw new DeferredItemRejectedError(
        `item of kind "${String((item as { kind?: unknown }).kind)}"`,
        'unknown kind',
        'Use job(), log(), metric() or run()',
      );
  }
  if (bytes > maxItemBytes) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `its payload is ${bytes} bytes, over maxItemBytes (${maxItemBytes})`,
      'Store large data elsewhere and defer a reference to it, or raise maxItemBytes',
    );
  }
}
