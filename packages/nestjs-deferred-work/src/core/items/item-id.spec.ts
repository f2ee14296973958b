import { newItemId } from './item-id';

describe('newItemId', () => {
  it('gives dw- and a UUID v4, different every time', () => {
    const ids = Array.from({ length: 10_000 }, () => newItemId());
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^dw-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('counts in the last 12 hex digits, across the 4,096-id blocks', () => {
    const ids = Array.from({ length: 9000 }, () => newItemId());
    const counter = (id: string) => parseInt(id.slice(-12), 16);
    const prefix = ids[0].slice(0, -12);
    for (let i = 1; i < ids.length; i++) {
      expect(ids[i].slice(0, -12)).toBe(prefix);
      expect(counter(ids[i])).toBe(counter(ids[0]) + i);
    }
  });
});
