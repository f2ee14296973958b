import { errorCode, errorMessage } from './error-message';

describe('errorCode', () => {
  it('reads the code a client library puts on its errors', () => {
    expect(errorCode(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED');
    expect(errorCode(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe('57P01');
    expect(errorCode(Object.assign(new Error('Connection lost: The server closed the connection.'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }))).toBe('PROTOCOL_CONNECTION_LOST');
    expect(errorCode(Object.assign(new Error('Rate exceeded'), { code: 'ThrottlingException' }))).toBe('ThrottlingException');
  });

  it('looks inside an AggregateError (a host refused on every address) and a cause', () => {
    const aggregate = new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:6379'), { code: 'ECONNREFUSED' })], '');
    expect(errorCode(aggregate)).toBe('ECONNREFUSED');
    expect(errorCode(new Error('write failed', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) }))).toBe('ECONNRESET');
  });

  it("takes a Redis error reply's prefix", () => {
    const reply = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), { name: 'ReplyError' });
    expect(errorCode(reply)).toBe('LOADING');
  });

  it('gives nothing for errors without a code, and never throws', () => {
    expect(errorCode(new Error('plain'))).toBeUndefined();
    expect(errorCode('a string')).toBeUndefined();
    expect(errorCode(null)).toBeUndefined();
    expect(errorCode({ code: 'has spaces in it' })).toBeUndefined();
    expect(errorCode(new DOMException('This operation was aborted', 'AbortError'))).toBeUndefined();
    expect(errorCode(new DOMException('The operation timed out', 'TimeoutError'))).toBe('ETIMEDOUT');
    const cyclic: { cause?: unknown } = {};
    cyclic.cause = cyclic;
    expect(errorCode(cyclic)).toBeUndefined();
    expect(errorMessage(new Error('m'))).toBe('m');
  });
});
