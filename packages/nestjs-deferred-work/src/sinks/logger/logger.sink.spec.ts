import { jest } from '@jest/globals';
import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { ConsoleLogger as ConsoleLogger11 } from '@nestjs/common-11';
import type { DeferredLogLevel, LogItem, SinkItem } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { LoggerSink } from './logger.sink';
import type { LoggerSinkOptions } from './logger-sink.options';

const log = (level: DeferredLogLevel, message: string, fields?: Record<string, unknown>): LogItem => ({
  kind: 'log',
  level,
  message,
  fields,
  when: 'always',
  createdAt: 0,
});
const signal = new AbortController().signal;
const write = (sink: LoggerSink, items: SinkItem[]) => sink.write(items, { signal, attempt: 1 });

/** A LoggerService that records its calls. */
class Recorder implements LoggerService {
  calls: Array<[string, ...unknown[]]> = [];
  log(...args: unknown[]) { this.calls.push(['log', ...args]); }
  error(...args: unknown[]) { this.calls.push(['error', ...args]); }
  warn(...args: unknown[]) { this.calls.push(['warn', ...args]); }
  debug(...args: unknown[]) { this.calls.push(['debug', ...args]); }
  verbose(...args: unknown[]) { this.calls.push(['verbose', ...args]); }
  fatal(...args: unknown[]) { this.calls.push(['fatal', ...args]); }
}

/** Captures what a ConsoleLogger writes to stdout/stderr. */
function captureOutput(): { lines: () => string[]; restore: () => void } {
  const out: string[] = [];
  const spies = [jest.spyOn(process.stdout, 'write'), jest.spyOn(process.stderr, 'write')];
  for (const spy of spies) spy.mockImplementation(((chunk: string | Uint8Array) => (out.push(String(chunk)), true)) as never);
  return { lines: () => out.join('').split('\n').filter(Boolean), restore: () => spies.forEach((s) => s.mockRestore()) };
}

describe('LoggerSink', () => {
  afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

  it('maps every level to its LoggerService method (info → log) and passes the context last', async () => {
    const logger = new Recorder();
    const sink = new LoggerSink({ logger, context: 'Orders' });
    const levels: DeferredLogLevel[] = ['fatal', 'error', 'warn', 'log', 'info', 'debug', 'verbose'];
    expect(await write(sink, levels.map((level) => log(level, level)))).toBeUndefined();
    expect(logger.calls).toEqual([
      ['fatal', 'fatal', 'Orders'],
      ['error', 'error', 'Orders'],
      ['warn', 'warn', 'Orders'],
      ['log', 'log', 'Orders'],
      ['log', 'info', 'Orders'],
      ['debug', 'debug', 'Orders'],
      ['verbose', 'verbose', 'Orders'],
    ]);
  });

  it('writes fatal as error to a logger without fatal(), and skips debug/verbose on one without them (as Nest does)', async () => {
    const calls: unknown[][] = [];
    const logger: LoggerService = { log: (...a) => calls.push(['log', ...a]), error: (...a) => calls.push(['error', ...a]), warn: (...a) => calls.push(['warn', ...a]) };
    await write(new LoggerSink({ logger }), [log('fatal', 'f'), log('debug', 'd'), log('verbose', 'v')]);
    expect(calls).toEqual([['error', 'f', 'DeferredWork']]);
  });

  it.each([
    ['fields-first', [{ orderId: 7 }, 'placed', 'DeferredWork']],
    ['params', ['placed', { orderId: 7 }, 'DeferredWork']],
    ['object', [{ orderId: 7, message: 'placed' }, 'DeferredWork']],
  ] as const)('passes fields in the %s style', async (fieldsStyle, expected) => {
    const logger = new Recorder();
    await write(new LoggerSink({ logger, fieldsStyle }), [log('info', 'placed', { orderId: 7 }), log('info', 'no fields', {})]);
    expect(logger.calls).toEqual([['log', ...expected], ['log', 'no fields', 'DeferredWork']]);
  });

  it('takes the context from a function of the item, falling back to the default when it gives nothing', async () => {
    const logger = new Recorder();
    const sink = new LoggerSink({ logger, context: (item) => item.fields?.route as string | undefined });
    await write(sink, [log('info', 'a', { route: 'GET /orders' }), log('info', 'b')]);
    expect(logger.calls.map((c) => c.at(-1))).toEqual(['GET /orders', 'DeferredWork']);
  });

  it('a logger that throws fails that record alone, not retried; the others are written', async () => {
    const logger = new Recorder();
    logger.warn = () => {
      throw new Error('transport down');
    };
    const result = await write(new LoggerSink({ logger }), [log('info', 'a'), log('warn', 'b'), log('info', 'c')]);
    expect(result).toEqual({ failed: [{ index: 1, error: new Error('transport down'), retryable: false }] });
    expect(logger.calls.map((c) => c[1])).toEqual(['a', 'c']);
  });

  it('refuses items that are not logs, alone', async () => {
    const logger = new Recorder();
    const result = await write(new LoggerSink({ logger }), [{ kind: 'metric', name: 'm', value: 1, when: 'always', createdAt: 0 }, log('info', 'a')]);
    expect(result?.failed?.[0]).toMatchObject({ index: 0, retryable: false, error: { message: expect.stringMatching(/takes log items only/) } });
    expect(logger.calls).toEqual([['log', 'a', 'DeferredWork']]);
  });

  it("by default writes to the app's logger (Logger.overrideLogger / app.useLogger), looked up at each write", async () => {
    const first = new Recorder();
    const second = new Recorder();
    const sink = new LoggerSink();
    Logger.overrideLogger(first);
    await write(sink, [log('info', 'one', { a: 1 })]);
    Logger.overrideLogger(second);
    await write(sink, [log('error', 'two')]);
    expect(first.calls).toEqual([['log', { a: 1, message: 'one' }, 'DeferredWork']]); // an unknown logger: 'object' style
    expect(second.calls).toEqual([['error', 'two', 'DeferredWork']]);
  });

  it("auto: a Nest 12 ConsoleLogger in JSON mode gets the fields as structured params, one record each", async () => {
    Logger.overrideLogger(new ConsoleLogger({ json: true }));
    const output = captureOutput();
    try {
      await write(new LoggerSink({ context: 'Orders' }), [log('info', 'placed', { orderId: 7, total: 9.5 }), log('error', 'failed', { orderId: 8 })]);
    } finally {
      output.restore();
    }
    const records = output.lines().map((line) => JSON.parse(line));
    expect(records).toEqual([
      { level: 'log', pid: process.pid, timestamp: expect.any(Number), message: 'placed', context: 'Orders', params: { orderId: 7, total: 9.5 } },
      { level: 'error', pid: process.pid, timestamp: expect.any(Number), message: 'failed', context: 'Orders', params: { orderId: 8 } },
    ]);
  });

  it("auto: a ConsoleLogger with structuredParams off gets one object (one record, not two)", async () => {
    Logger.overrideLogger(new ConsoleLogger({ json: true, structuredParams: false }));
    const output = captureOutput();
    try {
      await write(new LoggerSink(), [log('warn', 'placed', { orderId: 7 })]);
    } finally {
      output.restore();
    }
    expect(output.lines().map((line) => JSON.parse(line))).toEqual([
      { level: 'warn', pid: process.pid, timestamp: expect.any(Number), message: { orderId: 7, message: 'placed' }, context: 'DeferredWork' },
    ]);
  });

  it("auto: Nest 11's ConsoleLogger (no structured params) gets one object, not a second record", async () => {
    const output = captureOutput();
    try {
      await write(new LoggerSink({ logger: new ConsoleLogger11({ json: true }) }), [log('log', 'placed', { orderId: 7 })]);
    } finally {
      output.restore();
    }
    expect(output.lines().map((line) => JSON.parse(line))).toEqual([
      { level: 'log', pid: process.pid, timestamp: expect.any(Number), message: { orderId: 7, message: 'placed' }, context: 'DeferredWork' },
    ]);
  });

  it.each([
    ['a bad name', { name: '' }, /option "name" must be a non-empty string/],
    ['a logger without log()', { logger: { error() {}, warn() {} } }, /option "logger" must be a Nest LoggerService/],
    ['an empty context', { context: '' }, /option "context" must be a non-empty string or a function/],
    ['an unknown style', { fieldsStyle: 'pino' }, /option "fieldsStyle" must be one of 'auto', 'fields-first', 'params', 'object', got "pino"/],
  ])('throws a SinkConfigError at construction for %s', (_what, options, message) => {
    const make = () => new LoggerSink(options as unknown as LoggerSinkOptions);
    expect(make).toThrow(SinkConfigError);
    expect(make).toThrow(message);
  });
});
