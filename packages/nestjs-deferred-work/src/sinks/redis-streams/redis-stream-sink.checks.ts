import type { SinkItem } from '../../core/items/deferred-item.interface';
import { checkSinkBasics, checkString, optionError, type SinkSettingsBase } from '../kit/option-checks';
import { defaultFields, defaultStream, type Trim } from './redis-stream-entries';
import { REDIS_STREAM_SINK_DEFAULTS, type RedisStreamSinkOptions } from './redis-stream-sink.options';

/** `RedisStreamSink`'s options, checked, every default applied. */
export interface RedisStreamSinkSettings extends SinkSettingsBase {
  readonly stream: (item: SinkItem) => string;
  readonly fields: (item: SinkItem) => Record<string, string>;
  readonly trim: Trim;
  readonly noMkStream: boolean;
}

/** Checks `new RedisStreamSink(options)`'s options. */
export function checkRedisStreamSinkOptions(options: RedisStreamSinkOptions | undefined): RedisStreamSinkSettings {
  const example = "{ client: 'REDIS' } (the token of the app's ioredis client, the client itself, or a redis:// URL)";
  const { o, name, label, kinds } = checkSinkBasics('RedisStreamSink', options, example, REDIS_STREAM_SINK_DEFAULTS);
  let stream: (item: SinkItem) => string;
  if (typeof o.stream === 'function') stream = o.stream;
  else if (o.stream === undefined) stream = defaultStream;
  else {
    const key = checkString(label, 'stream', o.stream, { fallback: '', fix: 'Pass a stream key, or a function of the item.' });
    stream = () => key;
  }
  if (o.fields !== undefined && typeof o.fields !== 'function') throw optionError(label, 'fields', 'must be a function of the item', "Pass (item) => ({ id: item.id, … }) returning string values.", o.fields);
  const fields = o.fields ?? defaultFields;
  if (o.maxLen !== undefined && o.maxAgeMs !== undefined) throw optionError(label, 'maxLen', 'cannot be used with "maxAgeMs"', 'Trim by length or by age, not both.');
  let trim: Trim;
  if (o.maxLen !== undefined) trim = { maxLen: checkPositive(label, 'maxLen', o.maxLen) };
  if (o.maxAgeMs !== undefined) trim = { maxAgeMs: checkPositive(label, 'maxAgeMs', o.maxAgeMs) };
  const noMkStream = o.noMkStream ?? REDIS_STREAM_SINK_DEFAULTS.noMkStream;
  if (typeof noMkStream !== 'boolean') throw optionError(label, 'noMkStream', 'must be true or false', 'Leave it out for false.', o.noMkStream);
  const client = o.client ?? REDIS_STREAM_SINK_DEFAULTS.client;
  return { name, label, kinds, client, stream, fields, trim, noMkStream };
}

function checkPositive(label: string, option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw optionError(label, option, 'must be a whole number >= 1', 'Leave it out for no trimming.', value);
  return value;
}
