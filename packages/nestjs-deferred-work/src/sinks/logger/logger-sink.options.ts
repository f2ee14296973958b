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

/**
 * Which names the request and trace ids take among a record's fields:
 * - `'camel'`: `requestId`, `traceId`, `spanId`;
 * - `'opentelemetry'`: `requestId`, `trace_id`, `span_id`, `trace_flags` — the names OpenTelemetry's log
 *   data model and `@opentelemetry/instrumentation-pino` use, so deferred lines match the app's own;
 * - `'none'`: `requestId` only. The trace ids still reach the log: every record is written inside its
 *   item's span context, where an OpenTelemetry log bridge or pino's instrumentation adds them.
 */
export type LoggerSinkTraceFields = 'camel' | 'opentelemetry' | 'none';

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
   * The context of a record that has none of its own (Nest's `context`, pino's `context` field): a
   * string, or a function of the item (e.g. `(item) => String(item.fields?.route ?? 'DeferredWork')`).
   * A record deferred with a context (`new DeferredLogger(OrdersService.name)`, the `context` log
   * option) keeps it. Default `'DeferredWork'`.
   */
  context?: string | ((item: LogItem) => string | undefined);
  /** How message and fields are passed to the logger (see {@link LoggerSinkFieldsStyle}). Default `'auto'`. */
  fieldsStyle?: LoggerSinkFieldsStyle;
  /** The names of the request and trace ids among the fields (see {@link LoggerSinkTraceFields}). Default `'camel'`. */
  traceFields?: LoggerSinkTraceFields;
}

/** Defaults of {@link LoggerSinkOptions}. */
export const LOGGER_SINK_DEFAULTS = Object.freeze({
  name: 'logger',
  context: 'DeferredWork',
  fieldsStyle: 'auto' as LoggerSinkFieldsStyle,
  traceFields: 'camel' as LoggerSinkTraceFields,
});
