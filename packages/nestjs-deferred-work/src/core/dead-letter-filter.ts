import type { DeadLetterFilter, DeadLetterRecord } from './dead-letter-store.interface';

/** Whether a dead-letter record matches every field of a filter (what every store's `list`, `count` and `purge` apply). */
export function matchesDeadLetterFilter(record: DeadLetterRecord, filter: DeadLetterFilter): boolean {
  if (filter.sink !== undefined && record.sink !== filter.sink) return false;
  if (filter.reason !== undefined && record.reason !== filter.reason) return false;
  if (filter.code !== undefined && record.code !== filter.code) return false;
  if (filter.from !== undefined && record.at < filter.from) return false;
  if (filter.to !== undefined && record.at >= filter.to) return false;
  return true;
}

/** Whether a filter selects everything (no field given). */
export function isEmptyDeadLetterFilter(filter: DeadLetterFilter): boolean {
  return filter.sink === undefined && filter.reason === undefined && filter.code === undefined && filter.from === undefined && filter.to === undefined;
}
