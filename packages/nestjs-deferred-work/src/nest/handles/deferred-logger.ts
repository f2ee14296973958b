import { Logger, type LoggerService } from '@nestjs/common';
import type { DeferredLogLevel, DeferredLogOptions } from '../../core/items/deferred-item.interface';
import type { DeferredScope } from '../../capture/deferred-scope.interface';
import { currentScope } from './scope-source';

/** A stack trace, as Nest's `ConsoleLogger` tells one from a context. */
const STACK = /\n\s*at /;

/**
 * A `LoggerService` whose records are deferred: written by the logger sink after the response (on a
 * decorated route; at once elsewhere), batched, with the request's ids. Used like Nest's `Logger` —
 * `private readonly logger = new DeferredLogger(OrdersService.name)` — so migrating a class is the one
 * constructor: the calls stay the same, the context too (`log(message, context)`,
 * `error(message, stack, context)`, objects as fields).
 *
 * Before the application is bootstrapped (or after it shut down) the records are written at once
 * through Nest's `Logger`.
 */
export class DeferredLogger implements LoggerService {
  /**
   * @param context The records' context, as `new Logger(context)` takes it. Default: the logger sink's `context` option.
   * @param scope Where records go (set by `@Deferred.logger()`). Default: the current request's scope, or the direct one.
   */
  constructor(
    private context?: string,
    private readonly scope: () => DeferredScope | undefined = currentScope,
  ) {}

  /** Sets the context of the records written from now on (as `ConsoleLogger.setContext`). */
  setContext(context: string): void {
    this.context = context;
  }

  log(message: unknown, ...optionalParams: unknown[]): void {
    this.record('log', message, optionalParams);
  }

  error(message: unknown, ...optionalParams: unknown[]): void {
    this.record('error', message, optionalParams);
  }

  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.record('warn', message, optionalParams);
  }

  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.record('debug', message, optionalParams);
  }

  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.record('verbose', message, optionalParams);
  }

  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.record('fatal', message, optionalParams);
  }

  private record(level: DeferredLogLevel, message: unknown, params: unknown[]): void {
    const scope = this.scope();
    if (!scope) {
      const logger: LoggerService = this.context ? new Logger(this.context) : new Logger();
      const method = level === 'info' ? 'log' : level;
      (logger[method] as (m: unknown, ...p: unknown[]) => void).call(logger, message, ...params);
      return;
    }
    const { text, fields, context } = toRecord(level, message, params, this.context);
    const opts: DeferredLogOptions | undefined = context === undefined ? undefined : { context };
    scope.log(level, text, fields, opts);
  }
}

/** A Nest-style call's message, fields and context (the last string parameter; for `error`, a stack before it). */
export function toRecord(
  level: DeferredLogLevel,
  message: unknown,
  params: unknown[],
  context: string | undefined,
): { text: string; fields: Record<string, unknown> | undefined; context: string | undefined } {
  const args = [...params];
  let fields: Record<string, unknown> | undefined;
  const addFields = (more: Record<string, unknown>) => (fields = { ...fields, ...more });
  if (level === 'error' && args.length === 1 && typeof args[0] === 'string' && STACK.test(args[0])) {
    addFields({ stack: args.shift() });
  } else if (args.length > 0 && typeof args[args.length - 1] === 'string') {
    context = args.pop() as string;
    if (level === 'error' && typeof args[args.length - 1] === 'string') addFields({ stack: args.pop() });
  }
  let text: string;
  if (typeof message === 'string') text = message;
  else if (message instanceof Error) {
    text = message.message;
    addFields({ stack: message.stack });
  } else if (message !== null && typeof message === 'object') {
    const { message: inner, msg, ...rest } = message as Record<string, unknown>;
    text = typeof inner === 'string' ? inner : typeof msg === 'string' ? msg : '';
    addFields(rest);
  } else text = String(message);
  const extra: unknown[] = [];
  for (const arg of args) {
    if (arg instanceof Error) addFields({ err: { message: arg.message, stack: arg.stack } });
    else if (arg !== null && typeof arg === 'object') addFields(arg as Record<string, unknown>);
    else if (arg !== undefined) extra.push(arg); // further messages, as ConsoleLogger prints them
  }
  if (extra.length > 0) addFields({ args: extra });
  return { text, fields, context };
}
