import { ClientHolds } from './hold-open';

/** A drain the test ends by hand. */
function manualDrain() {
  let end!: () => void;
  let calls = 0;
  const ended = new Promise<void>((resolve) => (end = resolve));
  return { drain: () => (calls++, ended), end: () => end(), calls: () => calls };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ClientHolds', () => {
  it("waits for the drain before a held client's close runs, with its own this, arguments and result", async () => {
    const { drain, end } = manualDrain();
    const events: string[] = [];
    const pool = {
      name: 'pool',
      async end(this: { name: string }, reason: string) {
        events.push(`end(${this.name}, ${reason})`);
        return 'ended';
      },
    };
    const held = new ClientHolds(drain).hold(pool);
    const closing = pool.end('bye');
    await tick();
    expect(events).toEqual([]);
    expect(held.closed).toBe(false);
    end();
    await expect(closing).resolves.toBe('ended');
    expect(events).toEqual(['end(pool, bye)']);
    expect(held.closed).toBe(true);
  });

  it("holds a Nest shutdown hook set to the close method itself (ClientsModule's `onApplicationShutdown = close`)", async () => {
    const { drain, end } = manualDrain();
    const events: string[] = [];
    const client = { close: async () => void events.push('close'), onApplicationShutdown: undefined as unknown as () => Promise<void> };
    client.onApplicationShutdown = client.close;
    new ClientHolds(drain).hold(client);
    const hook = client.onApplicationShutdown();
    await tick();
    expect(events).toEqual([]);
    end();
    await hook;
    expect(events).toEqual(['close']);
  });

  it('wraps a client once however often it is held, and only the methods asked for', async () => {
    const { drain, end, calls } = manualDrain();
    const closes: string[] = [];
    const client = { quit: async () => void closes.push('quit'), close: async () => void closes.push('close') };
    const holds = new ClientHolds(drain);
    const first = holds.hold(client, { methods: ['quit'] });
    const quit = client.quit;
    expect(holds.hold(client)).toBe(first);
    expect(client.quit).toBe(quit);
    end();
    await client.close(); // not held: runs at once
    expect(calls()).toBe(0);
    await client.quit();
    expect(calls()).toBe(1);
    expect(closes).toEqual(['close', 'quit']);
  });

  it('runs a synchronous close after the drain and lets closing() wait for it; ioredis disconnect(true) (a reconnect) passes through', async () => {
    const { drain, end } = manualDrain();
    const events: string[] = [];
    const redis = { disconnect: (reconnect?: boolean) => void events.push(`disconnect(${reconnect ?? ''})`) };
    const holds = new ClientHolds(drain);
    holds.hold(redis);
    redis.disconnect(true);
    expect(events).toEqual(['disconnect(true)']);
    redis.disconnect();
    expect(events).toEqual(['disconnect(true)']);
    let closed = false;
    const closing = holds.closing().then(() => (closed = true));
    await tick();
    expect(closed).toBe(false);
    end();
    await closing;
    expect(events).toEqual(['disconnect(true)', 'disconnect()']);
  });

  it('closes the client even when the drain fails', async () => {
    const events: string[] = [];
    const client = { destroy: async () => void events.push('destroy') };
    new ClientHolds(() => Promise.reject(new Error('drain failed'))).hold(client);
    await client.destroy();
    expect(events).toEqual(['destroy']);
  });

  it("passes the client's own close error to its caller", async () => {
    const client = { end: async () => Promise.reject(new Error('already ended')) };
    const holds = new ClientHolds(async () => undefined);
    holds.hold(client);
    await expect(client.end()).rejects.toThrow('already ended');
    await holds.closing();
  });

  it("reports, and does not throw into Nest's shutdown, a shutdown hook whose close fails", async () => {
    const warnings: string[] = [];
    // As @nestjs/bullmq sets it on a queue: the hook closes the queue, and BullMQ 6's close throws for a
    // queue whose client was never made (ioredis not installed).
    class Queue {
      async close(): Promise<void> {
        throw new TypeError("Cannot read properties of undefined (reading 'off')");
      }
      onApplicationShutdown(): Promise<void> {
        return this.close();
      }
    }
    const queue = new Queue();
    const holds = new ClientHolds(async () => undefined, (m) => warnings.push(m));
    holds.hold(queue);
    await expect(queue.onApplicationShutdown()).resolves.toBeUndefined();
    expect(warnings).toEqual([
      "Queue.onApplicationShutdown() failed after the deferred work drained, and the shutdown goes on: Cannot read properties of undefined (reading 'off')",
    ]);
    await expect(queue.close()).rejects.toThrow(TypeError); // called directly: the client's own error
    await holds.closing();
  });
});

describe('ClientHolds on clients whose methods are not plain properties', () => {
  it('holds a read-only but configurable method (Knex) and a method inherited from the class', async () => {
    const events: string[] = [];
    const knexLike = Object.defineProperty(() => undefined, 'destroy', { value: async () => void events.push('destroy'), configurable: true });
    class Pool {
      async end() {
        events.push('end');
      }
    }
    const pool = new Pool();
    const other = new Pool();
    const holds = new ClientHolds(async () => void events.push('drain'));
    holds.hold(knexLike);
    holds.hold(pool);
    await (knexLike as unknown as { destroy(): Promise<void> }).destroy();
    await pool.end();
    await other.end(); // another instance of the class is not held
    expect(events).toEqual(['drain', 'destroy', 'drain', 'end', 'end']);
  });

  it('warns, and leaves the client working, when a method cannot be replaced', async () => {
    const warnings: string[] = [];
    const frozen = Object.freeze({ close: async () => 'closed' });
    new ClientHolds(async () => undefined, (m) => warnings.push(m)).hold(frozen);
    await expect(frozen.close()).resolves.toBe('closed');
    expect(warnings).toEqual([expect.stringMatching(/client\.close\(\) cannot be replaced .* Close it after app\.close\(\)/)]);
  });
});
