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
