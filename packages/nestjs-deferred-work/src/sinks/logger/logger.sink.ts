import { Logger, type LoggerService } from '@nestjs/common';
import type { DeferredLogLevel, LogItem, SinkItem, SinkKind } from '../../core/items/deferred-item.interface';
import type { DeferredSink, SinkWriteContext, SinkWriteResult } from '../../core/sink.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { LOGGER_SINK_DEFAULTS, type LoggerSinkFieldsStyle, type LoggerSinkOptions } from './logger-sink.options';
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

  constructor(options: LoggerSinkOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new SinkConfigError('LoggerSink: pass options { name?, logger?, context?, fieldsStyle? }, or nothing for the defaults.');
    }
    const { name = LOGGER_SINK_DEFAULTS.name, logger, context = LOGGER_SINK_DEFAULTS.context, fieldsStyle = LOGGER_SINK_DEFAULTS.fieldsStyle } = options;
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
    const context = (typeof this.context === 'function' ? this.context(item) : this.context) ?? LOGGER_SINK_DEFAULTS.context;
    const message = item.message;
    // The request and trace ids, when the item carries them, are fields like the item's own (these win).
    const fields = item.correlation ? { ...item.fields, ...item.correlation } : item.fields;
    let args: unknown[];
    if (!fields || typeof fields !== 'object' || !hasKeys(fields)) args = [message, context];
    else if (style === 'fields-first') args = [fields, message, context];
    else if (style === 'params') args = [message, isPlainObject(fields) ? fields : { ...fields }, context];
    else args = [{ ...fields, message }, context];
    const target = this.logger && !(this.logger instanceof Logger) ? this.logger : Logger;
    const fn = (target as unknown as Record<Method, ((...a: unknown[]) => void) | undefined>)[method];
    if (typeof fn === 'function') fn.apply(target, args);
  }
}

function hasKeys(value: object): boolean {
  for (const _ in value) return true;
  return false;
}
