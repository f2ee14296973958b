import { redisState } from './redis-state';

describe('redisState', () => {
  it.each([
    ['ready', 'up'],
    ['wait', 'up'],
    [undefined, 'up'],
    ['connecting', 'down'],
    ['reconnecting', 'down'],
    ['close', 'down'],
    ['end', 'closed'],
  ])('ioredis status %s reads as %s', (status, state) => {
    expect(redisState({ status })).toBe(state);
  });

  it('a client whose status throws counts as up (let the command tell)', () => {
    expect(redisState({ get status(): string { throw new Error('proxy'); } })).toBe('up');
  });
});

import { redisReply } from './redis-errors';

describe('redisReply', () => {
  it.each([
    ['WRONGTYPE Operation against a key holding the wrong kind of value', 'WRONGTYPE', false],
    ['ERR value is not an integer or out of range', 'ERR', false],
    ['ERR max number of clients reached', 'ERR', true],
    ['OOM command not allowed when used memory > maxmemory', 'OOM', true],
    ['LOADING Redis is loading the dataset in memory', 'LOADING', true],
    ['READONLY You can’t write against a read only replica.', 'READONLY', true],
    ['Connection is closed.', 'ENOTCONN', true], // ioredis's own, codeless: the client is not connected
    ['connect ECONNREFUSED 127.0.0.1:6379', undefined, true], // a message alone: the code is on the error (below)
  ])('%s → code %s, retryable %s', (message, code, retryable) => {
    expect(redisReply(new Error(message))).toEqual(code === undefined ? { retryable } : { code, retryable });
  });

  it('a connection error keeps its code; one the client raises without a code gets ENOTCONN', () => {
    expect(redisReply(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toEqual({ code: 'ECONNRESET', retryable: true });
    expect(redisReply(new Error('x', { cause: new Error('Connection is closed.') }))).toEqual({ code: 'ENOTCONN', retryable: true });
  });
});

describe('redisState on a socket ioredis still calls ready', () => {
  it('a ready client whose socket can no longer be written is down: a command would be parked offline', () => {
    expect(redisState({ status: 'ready', stream: { writable: false } })).toBe('down');
    expect(redisState({ status: 'ready', stream: { writable: true } })).toBe('up');
  });
});
