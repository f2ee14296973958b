import { DeferredItemRejectedError } from './deferred-item-rejected.error';

describe('DeferredItemRejectedError', () => {
  const error = new DeferredItemRejectedError('job "confirm" on queue "mail"', 'its data cannot be serialised to JSON (cycle)', 'Pass plain data');

  it('says what was rejected, why, and how to fix it', () => {
    expect(error.message).toBe('DeferredWork rejected job "confirm" on queue "mail": its data cannot be serialised to JSON (cycle). Pass plain data');
    expect([error.name, error.item, error.problem, error.fix]).toEqual(['DeferredItemRejectedError', 'job "confirm" on queue "mail"', 'its data cannot be serialised to JSON (cycle)', 'Pass plain data']);
  });

  it('names where the item was deferred, when known', () => {
    expect(error.messageFrom('OrdersController.create()')).toBe(
      'DeferredWork rejected job "confirm" on queue "mail" (deferred in OrdersController.create()): its data cannot be serialised to JSON (cycle). Pass plain data',
    );
    expect(error.messageFrom(undefined)).toBe(error.message);
  });
});
