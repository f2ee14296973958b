import type { LoggerService } from '@nestjs/common';
import type { LogItem } from '../../core/items/deferred-item.interface';

/**
 * How a record's message and fields are passed to the logger's method:
 * - `'fields-first'`: `logger.info(fields, message, context)` — pino's convention; with
 *   `nestjs-pino` the fields become top-level JSON fields and `message` pino's `msg`;
 * - `'params'`: `logger.log(message, fields, context)` — Nest 12's `ConsoleLogger`, which keeps a
 *   plain object after the message as structured params (`params` in JSON mode, or top-level with
 *   `flattenParams`);
 * - `'object'`: `logger.log({ ...fields, message }, context)` — one object (nest-winston's
 *   convention; Nest 10/11's `ConsoleLogger` prints it as the message).
 * - `'auto'`: `'fields-first'` for `nestjs-pino`'s `Logger`, `'params'` for a `ConsoleLogger` that
 *   takes structured params, `'object'` for any other logger.
 *
 * A record without fields is always `logger.method(message, context)`.
 */
export type LoggerSinkFieldsStyle = 'auto' | 'fields-first' | 'params' | 'object';

/** Options of {@link LoggerSink}. */
export interface LoggerSinkOptions {
  /** Sink name used by `routing`, `sinkOptions` and `@AfterResponse({ sinks })`. Default `'logger'`. */
  name?: string;
  /**
   * The logger to write to. Default: the app's logger — the records go through Nest's static
   * `Logger`, which forwards to what `app.useLogger()` set (e.g. `nestjs-pino`'s `Logger`, also with
   * `bufferLogs`), or to Nest's `ConsoleLogger` when nothing was set.
   */
  logger?: LoggerService;
  /**
   * The context of every record (Nest's `context`, pino's `context` field): a string, or a function
   * of the item (e.g. `(item) => String(item.fields?.route ?? 'DeferredWork')`). Default `'DeferredWork'`.
   */
  context?: string | ((item: LogItem) => string | undefined);
  /** How message and fields are passed to the logger (see {@link LoggerSinkFieldsStyle}). Default `'auto'`. */
  fieldsStyle?: LoggerSinkFieldsStyle;
}

/** Defaults of {@link LoggerSinkOptions}. */
export const LOGGER_SINK_DEFAULTS = Object.freeze({ name: 'logger', context: 'DeferredWork', fieldsStyle: 'auto' as LoggerSinkFieldsStyle });
