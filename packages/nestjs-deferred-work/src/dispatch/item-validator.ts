import { DeferredItemRejectedError } from '../errors/deferred-item-rejected.error';
import type { DeferredItem } from '../items/deferred-item.interface';

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

/** Serialised size in bytes; exact when it could matter (a UTF-8 byte is at most 3 per UTF-16 unit). */
function payloadBytes(item: DeferredItem, what: string, payload: unknown, maxItemBytes: number): number {
  if (payload === undefined) return 0;
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
  return json.length * 3 <= maxItemBytes ? json.length : Buffer.byteLength(json);
}

/**
 * Checks an item before it is accepted; throws `DeferredItemRejectedError` saying what is wrong
 * and how to fix it. `maxItemBytes` caps the serialised payload (job data, log fields, metric tags).
 */
export function validateItem(item: DeferredItem, maxItemBytes: number): void {
  if (item.when !== 'success' && item.when !== 'always' && item.when !== 'failure') {
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
