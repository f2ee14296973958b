import { Logger, type LoggerService } from '@nestjs/common';
import type { DeferredLogLevel, ItemCorrelation, LogItem, SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { LOGGER_SINK_DEFAULTS, type LoggerSinkFieldsStyle, type LoggerSinkOptions, type LoggerSinkTraceFields } from './logger-sink.options';
import { checkOneOf } from '../kit/option-checks';

const TRACE_FIELDS: readonly LoggerSinkTraceFields[] = ['camel', 'opentelemetry', 'none'];
import { eachItem } from '../kit/each-item';

type Method = 'fatal' | 'error' | 'warn' | 'log' | 'debug' | 'verbose';
type Style = Exclude<LoggerSinkFieldsStyle, 'auto'>;

/** Item level → `LoggerService` method (documented in docs/sinks/logger.md). */
export const LOGGER_SINK_LEVELS: Readonly<Record<DeferredLogLevel, Method>> = Object.freeze({
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'log',
  info: 'log',
  debug: 'debug',
  verbose: 'verbose',
});

const STYLES: readonly LoggerSinkFieldsStyle[] = ['auto', 'fields-first', 'params', 'object'];

/** What `auto` found for each logger instance (the answer depends only on its class and options). */
const detected = new WeakMap<object, Style>();

/**
 * The style that suits a logger: `nestjs-pino`'s `Logger` takes fields first (its merging object);
 * a `ConsoleLogger` that keeps a plain object after the message as structured params (Nest 12)
 * takes them so; anything else gets one object.
 */
function detectStyle(receiver: object | undefined): Style {
  if (!receiver) return 'object';
  let style = detected.get(receiver);
  if (style) return style;
  const r = receiver as {
    contextName?: unknown;
    logger?: { assign?: unknown };
    getContextAndMessagesToPrint?: (args: unknown[]) => { params?: { probe?: unknown } } | undefined;
  };
  if (typeof r.contextName === 'string' && typeof r.logger?.assign === 'function') {
    style = 'fields-first';
  } else if (typeof r.getContextAndMessagesToPrint === 'function') {
    try {
      style = r.getContextAndMessagesToPrint(['message', { probe: 1 }, 'context'])?.params?.probe === 1 ? 'params' : 'object';
    } catch {
      style = 'object';
    }
  } else {
    style = 'object';
  }
  detected.set(receiver, style);
  return style;
}

/** The instance Nest's static `Logger` forwards to: what `app.useLogger()` set, its default `ConsoleLogger`, or nothing (`logger: false`). */
function appLogger(): LoggerService | undefined {
  return (Logger as unknown as { staticInstanceRef?: LoggerService }).staticInstanceRef;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Writes `log` items to the app's logger (`LoggerService`): Nest's `ConsoleLogger`, `nestjs-pino`,
 * or any logger given to `app.useLogger()` — or the one passed as `logger`. Each record gets the
 * level mapped from the item's (see {@link LOGGER_SINK_LEVELS}), the item's `fields` as structured
 * data (JSON fields with pino, `params` with `ConsoleLogger`'s JSON mode) and a context.
 *
 * A logger that throws fails that record alone: it is counted (`failedWrites`) and dead-lettered,
 * not retried, and never reaches the request or the process.
 */
export class LoggerSink implements DeferredSink<SinkItem> {
  readonly name: string;
  readonly kinds: readonly SinkKind[] = ['log'];
  private readonly logger: LoggerService | undefined;
  private readonly context: string | ((item: LogItem) => string | undefined);
  private readonly fieldsStyle: LoggerSinkFieldsStyle;
  private readonly traceFields: LoggerSinkTraceFields;
  /** `@opentelemetry/api`, when it can be loaded: records are written inside their item's span context. */
  private otel: OtelSpanApi | undefined;

  constructor(options: LoggerSinkOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new SinkConfigError('LoggerSink: pass options { name?, logger?, context?, fieldsStyle? }, or nothing for the defaults.');
    }
    const { name = LOGGER_SINK_DEFAULTS.name, logger, context = LOGGER_SINK_DEFAULTS.context, fieldsStyle = LOGGER_SINK_DEFAULTS.fieldsStyle } = options;
    this.traceFields = checkOneOf(`LoggerSink "${String(name)}"`, 'traceFields', options.traceFields, TRACE_FIELDS, LOGGER_SINK_DEFAULTS.traceFields);
    if (typeof name !== 'string' || name === '') {
      throw new SinkConfigError(`LoggerSink: option "name" must be a non-empty string, got ${JSON.stringify(name)}. Leave it out for "${LOGGER_SINK_DEFAULTS.name}".`, 'name');
    }
    this.name = name;
    const prefix = `LoggerSink "${name}"`;
    if (logger !== undefined && (logger === null || typeof logger !== 'object' || typeof logger.log !== 'function' || typeof logger.error !== 'function' || typeof logger.warn !== 'function')) {
      throw new SinkConfigError(
        `${prefix}: option "logger" must be a Nest LoggerService (an object with log, error and warn methods), e.g. app.get(Logger) of nestjs-pino. ` +
          "Leave it out to write to the app's logger (the one app.useLogger() set).",
        'logger',
      );
    }
    if (typeof context !== 'function' && (typeof context !== 'string' || context === '')) {
      throw new SinkConfigError(
        `${prefix}: option "context" must be a non-empty string or a function (item) => string, got ${JSON.stringify(context)}. Leave it out for "${LOGGER_SINK_DEFAULTS.context}".`,
        'context',
      );
    }
    if (!STYLES.includes(fieldsStyle)) {
      throw new SinkConfigError(`${prefix}: option "fieldsStyle" must be one of ${STYLES.map((s) => `'${s}'`).join(', ')}, got ${JSON.stringify(fieldsStyle)}. Leave it out for 'auto'.`, 'fieldsStyle');
    }
    this.logger = logger;
    this.context = context;
    this.fieldsStyle = fieldsStyle;
  }

  /** Loads `@opentelemetry/api` if the app has it, to write each record inside its item's span context. */
  async attach(): Promise<void> {
    try {
      const mod = (await import('@opentelemetry/api')) as unknown as OtelSpanApi & { default?: OtelSpanApi };
      this.otel = mod.trace && mod.context ? mod : mod.default;
    } catch {
      this.otel = undefined; // not installed: nothing to attach to
    }
  }

  async write(batch: readonly SinkItem[], _context?: SinkWriteContext): Promise<void | SinkWriteResult> {
    // The instance that receives the calls, looked up per batch: app.useLogger() may come after bootstrap.
    const given = this.logger;
    const receiver = given instanceof Logger ? appLogger() : given ?? appLogger();
    const style = this.fieldsStyle === 'auto' ? detectStyle(receiver) : this.fieldsStyle;
    return eachItem(batch, 'log', `LoggerSink "${this.name}"`, (item) => this.writeOne(item, receiver, style));
  }

  private writeOne(item: LogItem, receiver: LoggerService | undefined, style: Style): void {
    let method = LOGGER_SINK_LEVELS[item.level] ?? 'log';
    // A logger without fatal() gets error(); one without debug()/verbose() does not take those levels (as with Nest's Logger).
    if (method === 'fatal' && receiver && typeof receiver.fatal !== 'function') method = 'error';
    const context = item.context ?? (typeof this.context === 'function' ? this.context(item) : this.context) ?? LOGGER_SINK_DEFAULTS.context;
    const message = item.message;
    // The request and trace ids, when the item carries them, are fields like the item's own (these win).
    const fields = item.correlation ? { ...item.fields, ...correlationFields(item.correlation, this.traceFields) } : item.fields;
    let args: unknown[];
    if (!fields || typeof fields !== 'object' || !hasKeys(fields)) args = [message, context];
    else if (style === 'fields-first') args = [fields, message, context];
    else if (style === 'params') args = [message, isPlainObject(fields) ? fields : { ...fields }, context];
    else args = [{ ...fields, message }, context];
    const target = this.logger && !(this.logger instanceof Logger) ? this.logger : Logger;
    const fn = (target as unknown as Record<Method, ((...a: unknown[]) => void) | undefined>)[method];
    if (typeof fn !== 'function') return;
    const span = item.correlation;
    const otel = this.otel;
    if (!otel || span?.traceId === undefined || span.spanId === undefined) return void fn.apply(target, args);
    // Inside the item's span context: OpenTelemetry log bridges and pino's instrumentation read it.
    const spanContext = { traceId: span.traceId, spanId: span.spanId, traceFlags: span.traceFlags ?? 1, isRemote: true };
    otel.context.with(otel.trace.setSpanContext(otel.context.active(), spanContext), () => fn.apply(target, args));
  }
}

/** The part of `@opentelemetry/api` the sink uses. */
interface OtelSpanApi {
  context: { active(): unknown; with<R>(context: unknown, fn: () => R): R };
  trace: { setSpanContext(context: unknown, spanContext: { traceId: string; spanId: string; traceFlags: number; isRemote?: boolean }): unknown };
}

/** The request and trace ids as fields, named as `traceFields` says. */
function correlationFields(correlation: Readonly<ItemCorrelation>, names: LoggerSinkTraceFields): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (correlation.requestId !== undefined) fields.requestId = correlation.requestId;
  if (correlation.traceId === undefined || names === 'none') return fields;
  if (names === 'camel') {
    fields.traceId = correlation.traceId;
    fields.spanId = correlation.spanId;
  } else {
    fields.trace_id = correlation.traceId;
    fields.span_id = correlation.spanId;
    fields.trace_flags = (correlation.traceFlags ?? 1).toString(16).padStart(2, '0');
  }
  return fields;
}

function hasKeys(value: object): boolean {
  for (const _ in value) return true;
  return false;
}
