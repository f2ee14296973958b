import { newItemId } from './item-id';

describe('newItemId', () => {
  it('gives dw- and a UUID v4, different every time', () => {
    const ids = Array.from({ length: 10_000 }, () => newItemId());
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^dw-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
