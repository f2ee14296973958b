import { inOneSocketWrite } from './one-socket-write';

/** A socket double that records cork and uncork calls. */
function socket() {
  const calls: string[] = [];
  return { calls, stream: { cork: () => void calls.push('cork'), uncork: () => void calls.push('uncork') } };
}

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
