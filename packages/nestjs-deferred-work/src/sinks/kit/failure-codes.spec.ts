import { failureCode, NOT_CONNECTED, TIMED_OUT } from './failure-codes';

/** The pipeline's timeout error, as the write's signal carries it (matched by name). */
class WriteTimeoutError extends Error {
  override readonly name = 'WriteTimeoutError';
}

describe('failureCode', () => {
  it('keeps the code an error carries (its own, an AggregateError’s, a cause’s, a Redis reply’s)', () => {
    expect(failureCode(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED');
    expect(failureCode(Object.assign(new Error('the database system is starting up'), { code: '57P03' }))).toBe('57P03');
    expect(failureCode(new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:6379'), { code: 'ECONNREFUSED' })], ''))).toBe('ECONNREFUSED');
    expect(failureCode(Object.assign(new Error('READONLY You can’t write against a read only replica.'), { name: 'ReplyError' }))).toBe('READONLY');
  });

  it.each([
    ['Connection terminated unexpectedly', 'ECONNRESET'], // pg: the server or the link closed the connection
    ['Connection terminated due to connection timeout', 'ETIMEDOUT'], // pg: connectionTimeoutMillis
    ['timeout exceeded when trying to connect', 'ETIMEDOUT'], // pg-pool
    ['Client has encountered a connection error and is not queryable', NOT_CONNECTED], // pg
    ['Connection is closed.', NOT_CONNECTED], // ioredis
    ["Can't add new command when connection is in closed state", NOT_CONNECTED], // mysql2
  ])('a client’s codeless %j is %s, also as a cause', (message, code) => {
    expect(failureCode(new Error(message))).toBe(code);
    expect(failureCode(new Error('the write failed', { cause: new Error(message) }))).toBe(code);
  });

  it('the write’s own timeout and a TimeoutError (AbortSignal.timeout(), nats.js, the AWS SDK) are ETIMEDOUT; anything else without a code has none', () => {
    expect(failureCode(new WriteTimeoutError('write timed out after 5000 ms'))).toBe(TIMED_OUT);
    expect(failureCode(Object.assign(new Error('timeout'), { name: 'TimeoutError' }))).toBe(TIMED_OUT);
    expect(failureCode(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toBe(TIMED_OUT);
    expect(failureCode(new Error('aborted', { cause: new WriteTimeoutError('write timed out after 5000 ms') }))).toBe(TIMED_OUT);
    expect(failureCode(new Error('shutdown deadline reached'))).toBeUndefined();
    expect(failureCode(new Error('Connection terminated unexpectedly!'))).toBeUndefined(); // exact messages only
    expect(failureCode(undefined)).toBeUndefined();
    const cyclic: { message: string; cause?: unknown } = { message: 'loop' };
    cyclic.cause = cyclic;
    expect(failureCode(cyclic)).toBeUndefined();
  });
});
