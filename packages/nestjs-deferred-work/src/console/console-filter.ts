import type { DeadLetterReason } from '../core/dead-letter.interface';
import type { DeadLetterFilter } from '../core/dead-letter-store.interface';
import { filterOf } from '../nest/dead-letters/dead-letters-query';

/** @internal Every dead-letter reason, for the filter's list. */
export const REASONS: readonly DeadLetterReason[] = ['expired', 'attempts-exhausted', 'not-retryable', 'shutdown', 'shutdown-in-flight', 'closed', 'timeout'];

/** @internal The filter's fields as the form sends them (empty: any). */
export interface FilterFields {
  sink: string;
  reason: string;
  code: string;
  from: string;
  to: string;
}

const FIELDS = ['sink', 'reason', 'code', 'from', 'to'] as const;

/** A form's `datetime-local` (no zone) is read as UTC, as the page labels it. */
function utcInput(value: string): string {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(value) ? `${value}Z` : value;
}

/** @internal The filter fields of a query string or a form (values cut to 200 characters). */
export function fieldsOf(source: unknown): FilterFields {
  const input = (source && typeof source === 'object' ? source : {}) as Record<string, unknown>;
  const get = (name: string) => {
    const value = input[name];
    const first = Array.isArray(value) ? value[0] : value;
    return typeof first === 'string' ? first.trim().slice(0, 200) : '';
  };
  return { sink: get('sink'), reason: get('reason'), code: get('code'), from: get('from'), to: get('to') };
}

/** @internal The store's filter of the fields; throws a `BadRequestException` naming a bad field. */
export function filterOfFields(fields: FilterFields): DeadLetterFilter {
  const given: Record<string, string> = {};
  for (const name of FIELDS) if (fields[name] !== '') given[name] = name === 'from' || name === 'to' ? utcInput(fields[name]) : fields[name];
  return filterOf(given);
}

/** @internal The fields as a query string (`sink=a&code=ECONNREFUSED`), empty ones left out. */
export function queryOfFields(fields: FilterFields, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const name of FIELDS) if (fields[name] !== '') params.set(name, fields[name]);
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** @internal Whether no field is given (the filter selects every dead letter). */
export function isAny(fields: FilterFields): boolean {
  return FIELDS.every((name) => fields[name] === '');
}

/** @internal The filter in words, for confirmations and the log. */
export function describeFields(fields: FilterFields): string {
  const parts = FIELDS.filter((name) => fields[name] !== '').map((name) => `${name} ${fields[name]}`);
  return parts.length === 0 ? 'every dead letter' : parts.join(', ');
}
