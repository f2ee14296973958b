import { BadRequestException } from '@nestjs/common';
import type { DeadLetterReason } from '../../core/dead-letter.interface';
import type { DeadLetterFilter, DeadLetterQuery, RedriveSelector } from '../../core/dead-letter-store.interface';

const REASONS: readonly DeadLetterReason[] = ['expired', 'attempts-exhausted', 'not-retryable', 'shutdown', 'shutdown-in-flight', 'closed', 'timeout'];

/** A time given as epoch ms or an ISO date. */
function time(name: string, value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = typeof value === 'number' ? value : /^\d+$/.test(String(value)) ? Number(value) : Date.parse(String(value));
  if (!Number.isFinite(ms)) throw new BadRequestException(`"${name}" must be epoch milliseconds or an ISO date, got ${JSON.stringify(value)}`);
  return ms;
}

/** @internal The filter of a request's query string or body, checked (400 naming the field). */
export function filterOf(source: Record<string, unknown> | undefined): DeadLetterFilter {
  const input = source ?? {};
  const filter: DeadLetterFilter = {};
  if (input.sink !== undefined) filter.sink = String(input.sink);
  if (input.code !== undefined) filter.code = String(input.code);
  if (input.reason !== undefined) {
    if (!REASONS.includes(input.reason as DeadLetterReason)) {
      throw new BadRequestException(`"reason" must be one of ${REASONS.join(', ')}, got ${JSON.stringify(input.reason)}`);
    }
    filter.reason = input.reason as DeadLetterReason;
  }
  const from = time('from', input.from);
  const to = time('to', input.to);
  if (from !== undefined) filter.from = from;
  if (to !== undefined) filter.to = to;
  return filter;
}

/** @internal A page query from the query string. */
export function queryOf(source: Record<string, unknown>): DeadLetterQuery {
  const query: DeadLetterQuery = filterOf(source);
  if (source.limit !== undefined) {
    const limit = Number(source.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new BadRequestException(`"limit" must be a whole number from 1 to 1000, got ${JSON.stringify(source.limit)}`);
    query.limit = limit;
  }
  if (source.after !== undefined) query.after = String(source.after);
  return query;
}

/** @internal A redrive request's body: `{ ids }` or `{ filter }`, with `dryRun` and `perSecond`. */
export function redriveOf(body: Record<string, unknown> | undefined): { selector: RedriveSelector; dryRun: boolean; perSecond?: number } {
  const input = body ?? {};
  const dryRun = input.dryRun === true;
  const perSecond = input.perSecond === undefined ? undefined : Number(input.perSecond);
  if (perSecond !== undefined && (!Number.isInteger(perSecond) || perSecond < 1)) throw new BadRequestException(`"perSecond" must be a whole number >= 1, got ${JSON.stringify(input.perSecond)}`);
  if (Array.isArray(input.ids)) return { selector: { ids: input.ids.map(String) }, dryRun, perSecond };
  if (input.filter !== undefined && typeof input.filter === 'object') return { selector: { filter: filterOf(input.filter as Record<string, unknown>) }, dryRun, perSecond };
  throw new BadRequestException('Give { "ids": [...] } or { "filter": { "sink", "reason", "code", "from", "to" } } ({ "filter": {} } redrives every dead letter)');
}
