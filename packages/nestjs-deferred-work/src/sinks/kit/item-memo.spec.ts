import { ItemMemo } from './item-memo';

describe('ItemMemo', () => {
  it('keeps a value per item, invisible to keys, spreads, JSON and toEqual', () => {
    const memo = new ItemMemo<string[]>('test entry');
    const item = { kind: 'log', message: 'hi' };
    expect(memo.get(item)).toBeUndefined();
    memo.set(item, ['a']);
    expect(memo.get(item)).toEqual(['a']);
    // on the item itself (not in a map), as a property nothing enumerates
    const symbols = Object.getOwnPropertySymbols(item);
    expect(symbols).toHaveLength(1);
    expect(Object.getOwnPropertyDescriptor(item, symbols[0])).toMatchObject({ enumerable: false, value: ['a'] });
    expect(Object.keys(item)).toEqual(['kind', 'message']);
    expect(JSON.stringify(item)).toBe('{"kind":"log","message":"hi"}');
    expect(memo.get({ ...item })).toBeUndefined();
    expect(item).toEqual({ kind: 'log', message: 'hi' });
    memo.set(item, ['b']);
    expect(memo.get(item)).toEqual(['b']);
  });

  it('two memos keep their own values on the same item', () => {
    const first = new ItemMemo<number>('first');
    const second = new ItemMemo<number>('second');
    const item = {};
    first.set(item, 1);
    second.set(item, 2);
    expect([first.get(item), second.get(item)]).toEqual([1, 2]);
  });

  it('a frozen or sealed item, or a proxy that refuses properties, is memoised all the same', () => {
    const memo = new ItemMemo<number>('entry');
    const frozen = Object.freeze({ kind: 'log' });
    const sealed = Object.seal({ kind: 'metric' });
    const refusing = new Proxy({}, { defineProperty: () => false });
    memo.set(frozen, 1);
    memo.set(sealed, 2);
    memo.set(refusing, 3);
    expect([memo.get(frozen), memo.get(sealed), memo.get(refusing)]).toEqual([1, 2, 3]);
    memo.set(frozen, 4);
    expect(memo.get(frozen)).toBe(4);
  });

  it('a value set again after the item was frozen is the one read', () => {
    const memo = new ItemMemo<number>('entry');
    const item = { kind: 'log' };
    memo.set(item, 1);
    Object.freeze(item);
    memo.set(item, 2);
    expect(memo.get(item)).toBe(2);
  });
});
