import type { SinkItem } from '../../core/items/deferred-item.interface';
import { itemId } from '../kit/item-id';
import { itemParts } from '../kit/item-parts';
import { traceparent } from '../kit/traceparent';

/** The default stream of an item: `deferred:<kind>`. */
export function defaultStream(item: SinkItem): string {
  return `deferred:${item.kind}`;
}

/**
 * The default fields of an entry: `id` (the item's id), `kind`, `name` (a job's queue, a log record's
 * level, a metric's name), `payload` (the rest of the item as JSON), `createdAt` (epoch ms), and `requestId`, `traceparent`
 * when the item carries them.
 */
export function defaultFields(item: SinkItem): Record<string, string> {
  const args = defaultFieldArgs(item);
  const fields: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) fields[args[i]] = args[i + 1];
  return fields;
}

/**
 * The default fields as `XADD` arguments (`field value …`, in the order of `defaultFields`), built
 * without the intermediate object: what the sink sends when `fields` is left out.
 */
export function defaultFieldArgs(item: SinkItem): string[] {
  const { name, payload } = itemParts(item);
  const args = ['id', itemId(item), 'kind', item.kind, 'name', name, 'payload', JSON.stringify(payload), 'createdAt', String(item.createdAt)];
  const c = item.correlation;
  if (c?.requestId !== undefined) args.push('requestId', c.requestId);
  const trace = traceparent(c);
  if (trace !== undefined) args.push('traceparent', trace);
  return args;
}

/** An item ready to append: its stream and its fields as `XADD` arguments (`field value …`). */
export interface StreamEntry {
  stream: string;
  fields: string[];
}

/** How an `XADD` trims its stream. */
export type Trim = { maxLen: number } | { maxAgeMs: number } | undefined;

/**
 * The arguments of an `XADD` between its stream and its fields: `NOMKSTREAM`, the trimming, `*`. The
 * same for every entry of a batch (`MINID` is computed from the batch's `now`).
 */
export function xaddHead(trim: Trim, noMkStream: boolean, now: number): string[] {
  const args: string[] = [];
  if (noMkStream) args.push('NOMKSTREAM');
  if (trim && 'maxLen' in trim) args.push('MAXLEN', '~', String(trim.maxLen));
  else if (trim) args.push('MINID', '~', `${Math.max(0, now - trim.maxAgeMs)}-0`);
  args.push('*');
  return args;
}

/** The arguments of one `XADD` (after the command's name). */
export function xaddArgs(stream: string, fields: Record<string, string>, trim: Trim, noMkStream: boolean, now: number): string[] {
  const args = [stream, ...xaddHead(trim, noMkStream, now)];
  for (const [key, value] of Object.entries(fields)) args.push(key, value);
  return args;
}
