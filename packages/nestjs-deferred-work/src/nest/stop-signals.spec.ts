import { createServer, request, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { drainApplication, drainMessage, drainOnStopSignals, handledElsewhere, stopAccepting, type StopSignalTarget } from './stop-signals';

/**
 * The parts of the drain on a stop signal that need no signal: the registry's listeners, what counts
 * as another handler, and a closing HTTP server. The signals themselves are sent to real processes in
 * test/integration/stop-signal.spec.ts.
 */
const target = (timeoutMs = 1000): StopSignalTarget => ({ timeoutMs, drain: async () => undefined, log: () => undefined });
const counts = () => ({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') });

describe('drainOnStopSignals()', () => {
  it('installs one listener per signal for any number of applications, and removes it with the last one', () => {
    const before = counts();
    const releases = Array.from({ length: 15 }, () => drainOnStopSignals(target()));
    expect(counts()).toEqual({ SIGTERM: before.SIGTERM + 1, SIGINT: before.SIGINT + 1 });
    releases[0]();
    releases[0](); // idempotent: the others stay registered
    expect(counts()).toEqual({ SIGTERM: before.SIGTERM + 1, SIGINT: before.SIGINT + 1 });
    for (const release of releases) release();
    expect(counts()).toEqual(before);
    const again = drainOnStopSignals(target());
    expect(counts()).toEqual({ SIGTERM: before.SIGTERM + 1, SIGINT: before.SIGINT + 1 });
    again();
    expect(counts()).toEqual(before);
  });
});

describe('handledElsewhere()', () => {
  const own = () => undefined;
  const other = () => undefined;
  const emitterKey = Symbol.for('signal-exit emitter');
  /** The runner's own SIGTERM listeners, if any, set aside during each test. */
  let saved: Array<(...args: unknown[]) => void> = [];
  beforeEach(() => {
    saved = process.listeners('SIGTERM') as typeof saved;
    for (const listener of saved) process.removeListener('SIGTERM', listener);
  });
  afterEach(() => {
    process.removeListener('SIGTERM', own);
    process.removeListener('SIGTERM', other);
    for (const listener of saved) process.on('SIGTERM', listener);
    delete (process as unknown as Record<symbol, unknown>)[emitterKey];
  });

  it('is false when only the library listens, true with another listener (Nest, the app)', () => {
    process.on('SIGTERM', own);
    expect(handledElsewhere('SIGTERM', own)).toBe(false);
    process.on('SIGTERM', other);
    expect(handledElsewhere('SIGTERM', own)).toBe(true);
  });

  it("does not count signal-exit's listeners (they raise the signal again only when alone)", () => {
    process.on('SIGTERM', own);
    process.on('SIGTERM', other);
    (process as unknown as Record<symbol, unknown>)[emitterKey] = { count: 1 };
    expect(handledElsewhere('SIGTERM', own)).toBe(false);
  });
});

describe('drainMessage()', () => {
  it('says what happens, for how long, and how to change it', () => {
    expect(drainMessage('SIGTERM', 5000, 1)).toBe(
      'SIGTERM received and no shutdown hooks are enabled: the HTTP server stops accepting connections, deferred work ' +
        'drains for up to 5000 ms, then the process exits with SIGTERM. Call app.enableShutdownHooks() to run the ' +
        "app's own shutdown hooks too (they do not run on this path), or set drainOnSignal: false to leave the signal to Node.",
    );
    expect(drainMessage('SIGINT', 100, 3)).toMatch(/^SIGINT received .* the HTTP servers stop accepting connections, deferred work of the 3 applications drains for up to 100 ms/);
  });
});

describe('stopAccepting()', () => {
  let server: Server;
  let agent: Agent;
  afterEach(() => {
    agent?.destroy();
    server?.closeAllConnections();
    server?.close();
  });

  function get(path: string): Promise<{ status: number; connection: string | undefined }> {
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('lets the request in flight finish, ends its keep-alive connection after it, and resolves once every connection ended', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    server = createServer((req, res) => {
      if (req.url === '/slow') void held.then(() => res.end('slow'));
      else res.end('fast');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    agent = new Agent({ keepAlive: true, maxSockets: 2 });
    expect(await get('/fast')).toEqual({ status: 200, connection: 'keep-alive' });
    const slow = get('/slow');
    await new Promise((resolve) => setTimeout(resolve, 20));

    let ended = false;
    const stopped = stopAccepting(server).then(() => (ended = true));
    expect(server.listening).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ended).toBe(false); // the slow request is still in flight
    release();
    expect((await slow).status).toBe(200);
    await stopped;
    expect(ended).toBe(true);
  });

  it('resolves at once for a server that does not listen', async () => {
    server = createServer();
    await expect(stopAccepting(server)).resolves.toBeUndefined();
  });
});

describe('drainApplication()', () => {
  it('waits for the open requests before the shutdown, and gives the shutdown the deadline', async () => {
    const steps: string[] = [];
    let open = true;
    const deadline = Date.now() + 5000;
    await drainApplication(
      {
        whenNoneOpen: async () => {
          await new Promise((resolve) => setTimeout(resolve, 30));
          open = false;
          steps.push('none open');
        },
        shutdown: async (end) => {
          steps.push(`shutdown (open: ${open}, deadline: ${end === deadline})`);
        },
      },
      deadline,
    );
    expect(steps).toEqual(['none open', 'shutdown (open: false, deadline: true)']);
  });
});
