import { inOneSocketWrite, inOneSocketWriteByNextTurn } from './one-socket-write';

/** A socket double that records cork and uncork calls. */
function socket() {
  const calls: string[] = [];
  return { calls, stream: { cork: () => void calls.push('cork'), uncork: () => void calls.push('uncork') } };
}

describe('inOneSocketWriteByNextTurn', () => {
  it('keeps the socket corked until the next turn, commands issued microtasks later included; a second call meanwhile does not cork again', async () => {
    const { calls, stream } = socket();
    const later = async (name: string) => {
      await Promise.resolve();
      await Promise.resolve();
      calls.push(name);
    };
    const first = inOneSocketWriteByNextTurn({ stream }, () => later('cmd a'));
    const second = inOneSocketWriteByNextTurn({ stream }, () => later('cmd b'));
    await Promise.all([first, second]);
    expect(calls).toEqual(['cork', 'cmd a', 'cmd b']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cork', 'cmd a', 'cmd b', 'uncork']);
    inOneSocketWriteByNextTurn({ stream }, () => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.slice(4)).toEqual(['cork', 'uncork']);
  });

  it('uncorks at the next turn when the sends throw, and a socket whose uncork throws is no error', async () => {
    const { calls, stream } = socket();
    expect(() =>
      inOneSocketWriteByNextTurn({ stream }, () => {
        throw new Error('client broke');
      }),
    ).toThrow('client broke');
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cork', 'uncork']);
    const broken = { cork: () => undefined, uncork: () => { throw new Error('destroyed'); } };
    inOneSocketWriteByNextTurn({ stream: broken }, () => undefined);
    await new Promise((resolve) => setImmediate(resolve));
  });
});

describe('inOneSocketWrite', () => {
  it('corks the client\'s socket around the sends and returns what they return', () => {
    const { calls, stream } = socket();
    const value = inOneSocketWrite({ stream }, () => {
      calls.push('send', 'send');
      return 42;
    });
    expect(value).toBe(42);
    expect(calls).toEqual(['cork', 'send', 'send', 'uncork']);
  });

  it('uncorks when the sends throw, and lets the error through', () => {
    const { calls, stream } = socket();
    expect(() =>
      inOneSocketWrite({ stream }, () => {
        calls.push('send');
        throw new Error('client broke');
      }),
    ).toThrow('client broke');
    expect(calls).toEqual(['cork', 'send', 'uncork']);
  });

  it('without a socket to cork (a Cluster, a test double, a throwing getter) just sends', () => {
    expect(inOneSocketWrite({}, () => 'sent')).toBe('sent');
    expect(inOneSocketWrite({ stream: { cork: 1 } }, () => 'sent')).toBe('sent');
    const throwing = Object.defineProperty({}, 'stream', {
      get() {
        throw new Error('no socket yet');
      },
    });
    expect(inOneSocketWrite(throwing, () => 'sent')).toBe('sent');
  });
});
