/**
 * What some scenarios need around the app, all on 127.0.0.1: a private Redis, a TCP delay proxy in
 * front of it, and an HTTP receiver for the log sink.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as http from 'node:http';
import * as net from 'node:net';
import { gunzipSync } from 'node:zlib';

/** A free TCP port on 127.0.0.1 (the OS picks it; it could in theory be taken again before use). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Sends one inline command to Redis and resolves with the first reply line. */
export function redisCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply to ${command} within ${timeoutMs} ms`));
    }, timeoutMs);
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\r\n');
      if (end >= 0) {
        clearTimeout(timer);
        socket.end();
        resolve(buffer.slice(0, end));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Redis's own CPU use so far (`INFO cpu`: used_cpu_user + used_cpu_sys), in µs. */
export function redisCpuUs(port: number, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('INFO cpu\r\n'));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply to INFO cpu within ${timeoutMs} ms`));
    }, timeoutMs);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const user = /used_cpu_user:([\d.]+)/.exec(text);
      const sys = /used_cpu_sys:([\d.]+)/.exec(text);
      if (user && sys && /\r\n\r\n$|used_cpu_user_children/.test(text)) {
        clearTimeout(timer);
        socket.end();
        resolve(Math.round((Number(user[1]) + Number(sys[1])) * 1e6));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

export interface PrivateRedis {
  port: number;
  url: string;
  version: string;
  stop(): Promise<void>;
}

/**
 * Starts `redis-server` (or `$REDIS_SERVER_BIN`) on a free port, without persistence, and waits for
 * it to answer PING. Rejects with a message saying how to provide one when it cannot start.
 */
export async function startRedis(): Promise<PrivateRedis> {
  const bin = process.env.REDIS_SERVER_BIN || 'redis-server';
  const port = await freePort();
  const child: ChildProcess = spawn(
    bin,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<Error>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve(
        error.code === 'ENOENT'
          ? new Error(
              `"${bin}" was not found (no such file, or not on PATH). Install Redis (e.g. apt-get install redis-server) ` +
                'or point REDIS_SERVER_BIN at a redis-server binary.',
            )
          : error,
      ),
    );
    child.once('exit', (code) => resolve(new Error(`${bin} exited with code ${code}: ${stderr.trim().slice(0, 300)}`)));
  });
  const deadline = Date.now() + 5000;
  for (;;) {
    const early = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(r, 100, undefined))]);
    if (early) throw early;
    try {
      if ((await redisCommand(port, 'PING')) === '+PONG') break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${bin} did not answer PING on port ${port} within 5 s: ${stderr.trim().slice(0, 300)}`);
    }
  }


  const versionLine = await new Promise<string>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('INFO server\r\n'));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
      const m = /redis_version:([^\r\n]+)/.exec(text);
      if (m) {
        socket.end();
        resolve(m[1]);
      }
    });
    socket.on('error', () => resolve('unknown'));
    setTimeout(() => {
      socket.destroy();
      resolve('unknown');
    }, 1000).unref();
  });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    version: versionLine,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      }),
  };
}

export interface DelayProxy {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * A TCP proxy to `127.0.0.1:targetPort` that holds every chunk `oneWayMs` before forwarding it, in
 * both directions: a request/response pays `2 × oneWayMs` of round trip. Order is kept (timers of
 * equal delay fire in the order they were set).
 */
export function startDelayProxy(targetPort: number, oneWayMs: number): Promise<DelayProxy> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const pipe = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk: Buffer) => {
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, oneWayMs);
    });
    from.on('end', () => setTimeout(() => to.end(), oneWayMs));
    from.on('error', () => to.destroy());
    from.on('close', () => setTimeout(() => to.destroy(), oneWayMs));
  };
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(targetPort, '127.0.0.1');
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    }
    pipe(client, upstream);
    pipe(upstream, client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        connections: () => accepted,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}

export interface LogReceiver {
  url: string;
  /** Records received so far (items of `{"items":[...]}` bodies, or lines of NDJSON ones). */
  records(): number;
  /** POST requests received so far. */
  posts(): number;
  close(): Promise<void>;
}

/** An HTTP endpoint that accepts the log sink's POSTs, counts their records and answers 204. */
export function startLogReceiver(): Promise<LogReceiver> {
  let records = 0;
  let posts = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts++;
      try {
        let raw = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
        const body = raw.toString('utf8');
        if ((req.headers['content-type'] ?? '').includes('ndjson')) {
          records += body.split('\n').filter((l) => l.trim() !== '').length;
        } else {
          const parsed = JSON.parse(body) as { items?: unknown[] } | unknown[];
          records += Array.isArray(parsed) ? parsed.length : Array.isArray(parsed.items) ? parsed.items.length : 1;
        }
        res.writeHead(204).end();
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('unreadable body');
      }
    });
  });
  server.keepAliveTimeout = 10_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/logs`,
        records: () => records,
        posts: () => posts,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      }),
    );
  });
}

/** librdkafka's mock Kafka cluster, run by `kcat` (Debian's kcat package), and how to end it. */
export interface KafkaMockCluster {
  brokers: string[];
  stop(): void;
}

/**
 * Starts librdkafka's mock cluster (`kcat -X test.mock.num.brokers=<n>`, kept alive as an idle
 * producer) and resolves with the bootstrap servers kcat prints. It speaks the Kafka protocol (produce
 * with acks = -1, metadata, consumer groups); it is not a real broker (no durability, simulated
 * replication).
 */
export function startKafkaMock(brokerCount = 3): Promise<KafkaMockCluster> {
  const child: ChildProcess = spawn(process.env.KCAT_BIN || 'kcat', ['-X', `test.mock.num.brokers=${brokerCount}`, '-b', '127.0.0.1:9', '-P', '-t', 'bench-idle'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      child.kill('SIGKILL');
      reject(new Error(`Cannot start the mock Kafka cluster: kcat ${why}. Install kcat (apt-get install kcat) or set KCAT_BIN.`));
    };
    const timer = setTimeout(() => fail(`printed no bootstrap servers within 5 s: ${output.slice(-300)}`), 5000);
    child.once('error', (error) => (clearTimeout(timer), fail(error.message)));
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = /replaced with (\S+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve({ brokers: found[1].split(','), stop: () => void child.kill('SIGKILL') });
      }
    });
  });
}
