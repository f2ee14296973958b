import { LoggerSink } from 'nestjs-deferred-work';
import { Logger, PinoLogger } from 'nestjs-pino';
import { describeSinkConformance } from '../support/sink-conformance';

/**
 * LoggerSink writing to a real logger: nestjs-pino's `Logger` over a pino logger whose destination
 * collects the JSON lines, which are parsed back. Poison: pino's `logMethod` hook throws for the one
 * record whose fields say `poison: true` — a logger that throws for that record alone.
 *
 * Left out: `outage` and `blackhole` (the logger is an in-process, synchronous call: no server to
 * stop, no link to cut).
 */
const MESSAGE = 'conformance item';
let lines: string[] = [];

// nestjs-pino builds one root pino logger per module instance (the first `PinoLogger` wins), so it is
// built once for the file; every test starts with an empty collection of lines.
const logger = new Logger(
  new PinoLogger({
    pinoHttp: [
      {
        level: 'info',
        hooks: {
          logMethod(args, method) {
            const fields = args[0] as unknown;
            if (typeof fields === 'object' && fields !== null && (fields as { poison?: unknown }).poison === true) {
              throw new Error(`logger refuses the record ${String((fields as { mark?: unknown }).mark)}`);
            }
            return method.apply(this, args);
          },
        },
      },
      { write: (line: string) => void lines.push(line) },
    ],
  }),
  {},
);

describeSinkConformance({
  name: 'LoggerSink on nestjs-pino',
  open: () => {
    lines = [];
    return { sink: new LoggerSink({ name: 'conf-logger', logger, context: 'Conformance' }) };
  },
  defer: (work, mark) => work.log('info', MESSAGE, { mark }),
  poison: (work, mark) => work.log('info', MESSAGE, { mark, poison: true }),
  received: async () =>
    lines
      .map((line) => JSON.parse(line) as { msg?: string; mark?: string; context?: string; level?: number })
      .filter((record) => record.msg === MESSAGE && record.context === 'Conformance' && record.level === 30)
      .map((record) => String(record.mark)),
});
