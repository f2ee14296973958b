import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { LogItem, SinkItem } from '../../core/items/deferred-item.interface';
import { SinkConfigError } from '../kit/sink-config.error';
import { sqlErrorCode, sqlErrorKind, withSqlCode } from './sql-errors';
import { columnValue, DEFAULT_COLUMNS, defaultRow } from './sql-rows';
import { SQL_PROCESSOR_DEFAULTS, SQL_SINK_DEFAULTS } from './sql-sink.options';
import { SqlSink } from './sql.sink';
import { mysqlExisting, mysqlInsert, pgInsert, quoteTable, type TableShape } from './sql-tables';

const log = (fields?: Record<string, unknown>): LogItem => ({ kind: 'log', level: 'info', message: 'hello', fields, when: 'always', createdAt: 1_700_000_000_000, id: 'dw-1' });

describe('SqlSink options', () => {
  it('defaults: the default table, every kind, one connection', () => {
    const sink = new SqlSink();
    expect(sink.name).toBe('sql');
    expect(sink.kinds).toEqual(['job', 'log', 'metric']);
    expect(sink.defaults).toBe(SQL_PROCESSOR_DEFAULTS);
  });

  it.each([
    [{ name: '' }, 'option "name" must be a non-empty string'],
    [{ table: 'drop table x; --' }, 'option "table" is not a table name'],
    [{ table: 'a.b.c' }, 'option "table" is not a table name'],
    [{ row: () => ({}) }, 'option "columns" is required with "row"'],
    [{ row: 'nope' }, 'option "row" must be a function of the item'],
    [{ columns: ['id'] }, 'option "columns" is only taken with "row"'],
    [{ row: () => ({}), columns: ['event'] }, 'option "columns" must include the id column "id"'],
    [{ row: () => ({}), columns: ['id', 'id'] }, 'option "columns" must be a non-empty array of distinct column names'],
    [{ row: () => ({}), columns: ['id', 'bad name'] }, 'option "columns" must be a non-empty array of distinct column names'],
    [{ createTable: 'yes' }, 'option "createTable" must be true or false'],
    [{ createTable: true, row: () => ({}), columns: ['id'] }, 'option "createTable" only creates the default table'],
    [{ createTable: true, table: () => 'events' }, 'option "createTable" only creates a table named by a string'],
    [{ maxConnections: 0 }, 'option "maxConnections" must be a whole number from 1 to 64'],
    [{ kinds: ['callback'] }, "option \"kinds\" must be a non-empty array of 'job', 'log', 'metric'"],
    [{ prepare: 1 }, 'option "prepare" must be true or false'],
  ])('%j is refused: %s', (options, message) => {
    expect(() => new SqlSink(options as never)).toThrow(SinkConfigError);
    expect(() => new SqlSink(options as never)).toThrow(message);
  });

  it('a custom row names its id column', () => {
    expect(() => new SqlSink({ row: (item) => ({ event_id: item.id, body: item }), columns: ['event_id', 'body'], idColumn: 'event_id' })).not.toThrow();
  });

  it('refuses writes before it is attached, for good', async () => {
    await expect(new SqlSink().write([log()], { signal: new AbortController().signal, attempt: 1 })).rejects.toMatchObject({ retryable: false });
  });
});

describe('SqlSink rows', () => {
  it('the default row: id, kind, name by kind, the rest as payload, correlation, created_at', () => {
    const item: SinkItem = { ...log({ order: 7 }), context: 'Orders', correlation: { requestId: 'r1', traceId: 't'.repeat(32), spanId: 's'.repeat(16) } };
    expect(defaultRow(item)).toEqual({
      id: 'dw-1',
      kind: 'log',
      name: 'info',
      payload: { message: 'hello', fields: { order: 7 }, context: 'Orders' },
      request_id: 'r1',
      trace_id: 't'.repeat(32),
      span_id: 's'.repeat(16),
      created_at: new Date(1_700_000_000_000),
    });
    expect(defaultRow({ kind: 'job', queue: 'mail', name: 'welcome', data: { to: 'a' }, when: 'always', createdAt: 1, id: 'dw-2' })).toMatchObject({ name: 'mail', payload: { name: 'welcome', data: { to: 'a' } } });
    expect(defaultRow({ kind: 'metric', name: 'orders', value: 2, tags: { a: 'b' }, when: 'always', createdAt: 1, id: 'dw-3' })).toMatchObject({ name: 'orders', payload: { value: 2, tags: { a: 'b' } } });
    expect(Object.keys(defaultRow(item))).toEqual([...DEFAULT_COLUMNS]);
  });

  it('values: objects as JSON, undefined as NULL, dates and buffers as they are; a cycle cannot be written', () => {
    expect(columnValue({ a: 1 })).toBe('{"a":1}');
    expect(columnValue([1, 2])).toBe('[1,2]');
    expect(columnValue(undefined)).toBeNull();
    const date = new Date();
    expect(columnValue(date)).toBe(date);
    expect(columnValue(10n)).toBe('10');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => columnValue(cycle)).toThrow();
    expect(() => columnValue(Number.NaN)).toThrow(/NaN is not a number SQL stores/);
    expect(() => columnValue(Number.POSITIVE_INFINITY)).toThrow(/Infinity is not a number SQL stores/);
    expect(() => columnValue(new Date('not a date'))).toThrow(/an invalid Date/);
    expect(() => columnValue(Symbol('s'))).toThrow(/a symbol is not a column value/);
  });

  it('validate refuses, when the item is deferred, a row that cannot be written', () => {
    const cyclic = new SqlSink({ row: (item) => ({ id: item.id, body: (() => { const c: Record<string, unknown> = {}; c.c = c; return c; })() }), columns: ['id', 'body'] });
    expect(() => cyclic.validate(log())).toThrow(/circular/i);
    const perTable = new SqlSink({ table: () => 'not a table' });
    expect(() => perTable.validate(log())).toThrow('is not a table name');
    const notObject = new SqlSink({ row: () => 5 as never, columns: ['id'] });
    expect(() => notObject.validate(log())).toThrow('row(item) must return an object of column values, got 5');
    const nan = new SqlSink({ row: (item) => ({ id: item.id, amount: Number.NaN }), columns: ['id', 'amount'] });
    expect(() => nan.validate(log())).toThrow('row(item) gave column "amount" NaN is not a number SQL stores; give null, or a string');
    const badDate = new SqlSink({ row: (item) => ({ id: item.id, at: new Date('x') }), columns: ['id', 'at'] });
    expect(() => badDate.validate(log())).toThrow('row(item) gave column "at" an invalid Date');
  });
});

describe('SqlSink statements', () => {
  const shape: TableShape = { table: 'audit.events', quoted: quoteTable('postgres', 'audit.events'), columns: ['id', 'body', 'at'], idIndex: 0, types: ['text', 'jsonb', 'timestamp with time zone'] };

  it('PostgreSQL: one constant statement per table (the batch as one JSON parameter), named once for its text, skipping ids already there', () => {
    const at = new Date('2026-01-02T03:04:05.006Z');
    const one = pgInsert(shape, [['a', '{"k":1}', null]], true);
    const many = pgInsert(shape, [['a', '{"k":1}', at], ['b', '[]', null]], true);
    expect(one.text).toBe(
      'INSERT INTO "audit"."events" ("id", "body", "at") SELECT "id", "body", "at" FROM jsonb_to_recordset($1::jsonb) ' +
        'AS r("id" text, "body" jsonb, "at" timestamp with time zone) ON CONFLICT ("id") DO NOTHING RETURNING "id" AS id',
    );
    expect(many.text).toBe(one.text);
    expect(many.name).toBe(one.name);
    // a json column's value goes in as the JSON it is; others as JSON values
    expect(JSON.parse(many.values[0] as string)).toEqual([
      { id: 'a', body: { k: 1 }, at: '2026-01-02T03:04:05.006Z' },
      { id: 'b', body: [], at: null },
    ]);
    expect(JSON.parse(pgInsert({ ...shape, types: ['text', 'bytea', 'text'] }, [['a', Buffer.from([1, 255]), 'x"y']], false).values[0] as string)).toEqual([{ id: 'a', body: '\\x01ff', at: 'x"y' }]);
    expect(pgInsert(shape, [['a', '{}', null]], false).name).toBeUndefined();
  });

  it('MySQL: a plain multi-row INSERT (not INSERT IGNORE, not ON DUPLICATE KEY UPDATE), and the lookup of the rows already there', () => {
    const my: TableShape = { ...shape, table: 'events', quoted: quoteTable('mysql', 'events') };
    const insert = mysqlInsert(my, [['a', '{}', null], ['b', '[]', null]]);
    expect(insert.text).toBe('INSERT INTO `events` (`id`, `body`, `at`) VALUES (?, ?, ?), (?, ?, ?)');
    expect(insert.text).not.toMatch(/IGNORE|DUPLICATE/);
    expect(insert.values).toEqual(['a', '{}', null, 'b', '[]', null]);
    expect(mysqlExisting(my, ['a', 'b'])).toEqual({ text: 'SELECT `id` AS id FROM `events` WHERE `id` IN (?, ?)', values: ['a', 'b'] });
  });
});

describe('SqlSink errors', () => {
  const pg = (code: string) => Object.assign(new Error(code), { code });
  const my = (errno: number, code: string, extra: object = {}) => Object.assign(new Error(code), { errno, code, sqlState: 'HY000', ...extra });

  it.each([
    ['23502', 'row'],
    ['23514', 'row'],
    ['22001', 'row'],
    ['22P02', 'row'],
    ['22P05', 'row'],
    ['23P01', 'row'],
    ['22026', 'row'],
    ['40001', 'transient'],
    ['40P01', 'transient'],
    ['57P01', 'transient'],
    ['57P02', 'transient'],
    ['57P03', 'transient'],
    ['53300', 'transient'],
    ['08006', 'transient'],
    ['25006', 'transient'],
  ])('PostgreSQL %s is %s', (code, kind) => {
    expect(sqlErrorKind(pg(code))).toBe(kind);
    expect(sqlErrorCode(pg(code))).toBe(code);
  });

  it.each([
    [1048, 'ER_BAD_NULL_ERROR', 'row'],
    [1406, 'ER_DATA_TOO_LONG', 'row'],
    [1366, 'ER_TRUNCATED_WRONG_VALUE_FOR_FIELD', 'row'],
    [3819, 'ER_CHECK_CONSTRAINT_VIOLATED', 'row'],
    [4025, 'ER_CONSTRAINT_FAILED', 'row'],
    [3144, 'ER_INVALID_JSON_CHARSET', 'row'],
    [1205, 'ER_LOCK_WAIT_TIMEOUT', 'transient'],
    [1213, 'ER_LOCK_DEADLOCK', 'transient'],
    [1040, 'ER_CON_COUNT_ERROR', 'transient'],
    [1053, 'ER_SERVER_SHUTDOWN', 'transient'],
    [1290, 'ER_OPTION_PREVENTS_STATEMENT', 'transient'],
  ])('MySQL %i %s is %s', (errno, code, kind) => {
    expect(sqlErrorKind(my(errno, code))).toBe(kind);
    expect(sqlErrorCode(my(errno, code))).toBe(String(errno));
  });

  it('a lost connection is transient, whatever the code', () => {
    expect(sqlErrorKind(Object.assign(new Error('reset'), { code: 'ECONNRESET', errno: -104 }))).toBe('transient');
    expect(sqlErrorKind(my(1048, 'ER_BAD_NULL_ERROR', { fatal: true }))).toBe('transient');
    expect(sqlErrorKind(new Error('Connection terminated unexpectedly'))).toBe('transient');
    expect(sqlErrorKind(undefined)).toBe('transient');
  });

  it('a lost connection keeps its code: the client’s, or the errno of pg’s codeless one; a connection not had carries it too', () => {
    expect(sqlErrorCode(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', errno: -111 }))).toBe('ECONNREFUSED');
    expect(sqlErrorCode(Object.assign(new Error('Connection lost: The server closed the connection.'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }))).toBe('PROTOCOL_CONNECTION_LOST');
    expect(sqlErrorCode(new Error('Connection terminated unexpectedly'))).toBe('ECONNRESET');
    const codeless = new Error('Connection terminated unexpectedly');
    expect(withSqlCode(codeless)).toMatchObject({ message: codeless.message, code: 'ECONNRESET', cause: codeless });
    const tooMany = my(1040, 'ER_CON_COUNT_ERROR');
    expect(withSqlCode(tooMany)).toMatchObject({ code: '1040', cause: tooMany });
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(withSqlCode(refused)).toBe(refused);
  });
});

describe('docs/sinks/sql.md', () => {
  it('its options table lists every option with the default the code has', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../../../../docs/sinks/sql.md'), 'utf8');
    const rows = new Map<string, string>();
    const section = doc.slice(doc.indexOf('## Options'), doc.indexOf('\n## ', doc.indexOf('## Options') + 3));
    for (const match of section.matchAll(/^\| `(\w+)` \| ([^|]+) \|/gm)) rows.set(match[1], match[2].trim());
    const expected: Record<string, string> = {
      name: `\`'${SQL_SINK_DEFAULTS.name}'\``,
      client: 'the one SQL client among the app\u2019s providers',
      kinds: "`['job', 'log', 'metric']`",
      table: `\`'${SQL_SINK_DEFAULTS.table}'\``,
      columns: 'the default table\u2019s',
      row: 'the default table\u2019s row',
      idColumn: `\`'${SQL_SINK_DEFAULTS.idColumn}'\``,
      createTable: `\`${SQL_SINK_DEFAULTS.createTable}\``,
      maxConnections: `\`${SQL_SINK_DEFAULTS.maxConnections}\``,
      bootstrapTimeoutMs: `\`${SQL_SINK_DEFAULTS.bootstrapTimeoutMs}\``,
      prepare: `\`${SQL_SINK_DEFAULTS.prepare}\``,
    };
    expect(Object.fromEntries(rows)).toEqual(expected);
  });
});
