import type { SinkItem } from '../../core/items/deferred-item.interface';

/**
 * An item as a name and a payload, for sinks that store it as a record: `name` is a job's queue, a
 * log record's level, a metric's name; `payload` is everything else of the item (a job's `name`,
 * `data` and `opts`; a record's `message`, `fields` and `context`; a point's `value`, `tags` and `op`).
 */
export function itemParts(item: SinkItem): { name: string; payload: Record<string, unknown> } {
  if (item.kind === 'job') {
    return { name: item.queue, payload: { name: item.name, data: item.data, ...(item.opts === undefined ? {} : { opts: item.opts }) } };
  }
  if (item.kind === 'log') {
    return {
      name: item.level,
      payload: { message: item.message, ...(item.fields === undefined ? {} : { fields: item.fields }), ...(item.context === undefined ? {} : { context: item.context }) },
    };
  }
  return { name: item.name, payload: { value: item.value, ...(item.tags === undefined ? {} : { tags: item.tags }), ...(item.op === undefined ? {} : { op: item.op }) } };
}
