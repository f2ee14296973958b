import type { SinkKind } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from './sink-config.error';

/**
 * The checks every sink's constructor runs on its options, with one message shape:
 * `<Sink> "<name>": option "<option>" <what is wrong>, got <what was given>. <how to fix it>`.
 * What was given is described, never echoed in full (a long string is cut; objects are named by kind),
 * and a secret is never passed here as `value`.
 */

/** A value as an option error shows it: a string quoted (cut at 80 characters), objects and arrays by kind. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(value);
}

/** The error for an option: `prefix: option "option" problem, got <value>. fix` (without "got" when `value` is left out). */
export function optionError(prefix: string, option: string, problem: string, fix: string, ...value: [unknown?]): SinkConfigError {
  const got = value.length > 0 ? `, got ${describeValue(value[0])}` : '';
  return new SinkConfigError(`${prefix}: option "${option}" ${problem}${got}.${fix ? ` ${fix}` : ''}`, option);
}

/** What every sink's checked options begin with. */
export interface SinkSettingsBase {
  readonly name: string;
  /** `<Sink> "<name>"`, what its messages start with. */
  readonly label: string;
  readonly kinds: readonly SinkKind[];
  readonly client: unknown;
}

/**
 * Checks what a sink's options that may be left out begin with: the options object (left out: `{}`),
 * `name` and `kinds` (`defaults`' when left out). Returns them with the label its messages start with,
 * `<Sink> "<name>"`.
 */
export function checkSinkBasics<T extends { name?: unknown; kinds?: unknown }>(
  sinkClass: string,
  options: T | undefined,
  example: string,
  defaults: { name: string; kinds: readonly SinkKind[] },
): { o: T; name: string; label: string; kinds: readonly SinkKind[] } {
  const o = checkOptionsObject(sinkClass, options, example, true);
  const name = checkSinkName(sinkClass, o.name, defaults.name);
  const label = `${sinkClass} "${name}"`;
  const kinds = checkSinkKinds(label, o.kinds, defaults.kinds);
  return { o, name, label, kinds };
}

/** Checks that a sink's options are an object (left out: `{}` when `optional`). */
export function checkOptionsObject<T extends object>(sinkClass: string, options: T | undefined, example: string, optional = false): T {
  if (options === undefined && optional) return {} as T;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new SinkConfigError(`${sinkClass}: options must be an object, got ${describeValue(options)}. Pass ${example}.`);
  }
  return options;
}

/** Checks a sink's `name` option: a non-empty string, `fallback` when left out. */
export function checkSinkName(sinkClass: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value === '') throw optionError(sinkClass, 'name', 'must be a non-empty string', `Pass a unique name, or leave it out for "${fallback}".`, value);
  return value;
}

/** Checks a whole-number option within `[min, max]`; `fallback` when left out. */
export function checkWholeNumber(
  prefix: string,
  option: string,
  value: unknown,
  rule: { min: number; max?: number; fallback: number; unit?: string },
): number {
  if (value === undefined) return rule.fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < rule.min || (rule.max !== undefined && value > rule.max)) {
    const range = rule.max === undefined ? `>= ${rule.min}` : `from ${rule.min} to ${rule.max}`;
    throw optionError(prefix, option, `must be a whole number ${range}${rule.unit ? ` (${rule.unit})` : ''}`, `Leave it out for ${rule.fallback}.`, value);
  }
  return value;
}

/** Checks an option that takes one of a few values; `fallback` when left out. */
export function checkOneOf<T extends string | number | boolean>(prefix: string, option: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    const list = allowed.map((a) => (typeof a === 'string' ? `'${a}'` : String(a))).join(', ');
    throw optionError(prefix, option, `must be one of ${list}`, `Leave it out for ${typeof fallback === 'string' ? `'${fallback}'` : String(fallback)}.`, value);
  }
  return value as T;
}

/** Checks a string option (non-empty unless `allowEmpty`); `fallback` when left out. */
export function checkString(prefix: string, option: string, value: unknown, rule: { fallback: string; allowEmpty?: boolean; fix?: string }): string {
  if (value === undefined) return rule.fallback;
  if (typeof value !== 'string' || (value === '' && !rule.allowEmpty)) {
    throw optionError(prefix, option, `must be a${rule.allowEmpty ? '' : ' non-empty'} string`, rule.fix ?? `Leave it out for ${JSON.stringify(rule.fallback)}.`, value);
  }
  return value;
}

const SINK_KINDS: readonly SinkKind[] = ['job', 'log', 'metric'];

/** Checks a sink's `kinds` option: a non-empty array of `'job'`, `'log'`, `'metric'`; `fallback` when left out. */
export function checkSinkKinds(prefix: string, value: unknown, fallback: readonly SinkKind[]): readonly SinkKind[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.length === 0 || !value.every((k) => SINK_KINDS.includes(k as SinkKind))) {
    throw optionError(prefix, 'kinds', "must be a non-empty array of 'job', 'log', 'metric'", 'Leave it out for all three.', value);
  }
  return Object.freeze([...(value as SinkKind[])]);
}
