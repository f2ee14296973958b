import { Logger } from '@nestjs/common';
import type { DeferredScope } from '../../capture/deferred-scope.interface';
import type { DeferredLogLevel } from '../../core/items/deferred-item.interface';
import { currentScope } from './scope-source';

/** pino's levels, as nestjs-pino's `PinoLogger` has them, and the item level each becomes. */
const LEVELS: Record<'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal', DeferredLogLevel> = {
  trace: 'verbose',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'fatal',
};

/** Replaces `%s`, `%d`, `%o`, `%j` in `message` with `args`, as pino does. */
function format(message: string, args: unknown[]): string {
  let i = 0;
  const text = message.replace(/%[sdifjoO%]/g, (token) => {
    if (token === '%%') return '%';
    if (i >= args.length) return token;
    const arg = args[i++];
    return token === '%j' || token === '%o' || token === '%O' ? JSON.stringify(arg) : String(arg);
  });
  return text;
}

/**
 * A deferred logger with nestjs-pino's `PinoLogger` calls — `info({ orderId }, 'order placed')`,
 * `info('placed %s', id)`, `error(err, 'failed')` — whose records the logger sink writes after the
 * response, with their context. In place of `@InjectPinoLogger(context)`: `@InjectDeferredPinoLogger(context)`
 * (or `new DeferredPinoLogger(context)`).
 */
export class DeferredPinoLogger {
  constructor(
    private context?: string,
    private readonly scope: () => DeferredScope | undefined = currentScope,
  ) {}

  /** As `PinoLogger.setContext`. */
  setContext(context: string): void {
    this.context = context;
  }

  trace(objOrMsg: unknown, ...args: unknown[]): void {
    this.record('trace', objOrMsg, args);
  }
  debug(objOrMsg: unknown, ...args: unknown[]): void {
    this.record('debug', objOrMsg, args);
  }
  info(objOrMsg: unknown, ...args: unknown[]): void {
    this.record('info', objOrMsg, args);
  }
  warn(objOrMsg: unknown, ...args: unknown[]): void {
    this.record('warn', objOrMsg, args);
  }
  error(objOrMsg: unknown, ...args: unknown[]): void {
    this.record('error', objOrMsg, args);
  }
  fatal(objOrMsg: unknown, ...args: unknown[]): void {
    this.record('fatal', objOrMsg, args);
  }

  private record(level: keyof typeof LEVELS, objOrMsg: unknown, args: unknown[]): void {
    let fields: Record<string, unknown> | undefined;
    let message = '';
    if (typeof objOrMsg === 'string') message = format(objOrMsg, args);
    else {
      if (objOrMsg instanceof Error) fields = { err: { type: objOrMsg.name, message: objOrMsg.message, stack: objOrMsg.stack } };
      else if (objOrMsg !== null && typeof objOrMsg === 'object') fields = { ...(objOrMsg as Record<string, unknown>) };
      const [msg, ...rest] = args;
      message = typeof msg === 'string' ? format(msg, rest) : objOrMsg instanceof Error ? objOrMsg.message : '';
    }
    const scope = this.scope();
    if (scope) return void scope.log(LEVELS[level], message, fields, this.context === undefined ? undefined : { context: this.context });
    // No application running (before bootstrap, after shutdown): written at once through Nest's Logger.
    const logger = this.context ? new Logger(this.context) : new Logger();
    const method = level === 'trace' ? 'verbose' : level === 'info' ? 'log' : level;
    if (fields) logger[method](message, fields);
    else logger[method](message);
  }
}
