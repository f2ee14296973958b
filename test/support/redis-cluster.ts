import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { RedisServer } from './redis-server';

/** The hash slots of a Redis Cluster. */
const SLOTS = 16_384;

/**
 * A private Redis Cluster for integration tests: `nodes` masters (no replicas), each a
 * `redis-server --cluster-enabled yes` on its own free port of 127.0.0.1, its `nodes-<port>.conf`
 * in a temporary directory (removed by `dispose()`), nothing persisted. The slots are split evenly
 * (`CLUSTER ADDSLOTS`), the nodes introduced (`CLUSTER MEET`), and `start()` resolves once every node
 * says `cluster_state:ok` and knows every other. Needs `redis-server` >= 3 (see {@link RedisServer}:
 * a missing binary fails with how to install one).
 */
export class RedisCluster {
  readonly host = '127.0.0.1';
  readonly servers: RedisServer[];
  private readonly dir = mkdtempSync(join(tmpdir(), 'deferred-work-cluster-'));

  constructor(nodes = 3) {
    this.servers = Array.from(
      { length: nodes },
      () => new RedisServer({ args: (port) => ['--cluster-enabled', 'yes', '--cluster-config-file', join(this.dir, `nodes-${port}.conf`), '--cluster-node-timeout', '5000'] }),
    );
  }

  /** Starts the nodes, assigns the slots, joins them, and waits until the cluster is `ok`. */
  async start(timeoutMs = 20_000): Promise<void> {
    await Promise.all(this.servers.map((s) => s.start()));
    const admins = this.servers.map((s) => new Redis({ host: s.host, port: s.port, lazyConnect: true }));
    try {
      const per = Math.ceil(SLOTS / admins.length);
      await Promise.all(
        admins.map((admin, i) => {
          const slots = Array.from({ length: Math.min(per, SLOTS - i * per) }, (_, k) => i * per + k);
          return admin.cluster('ADDSLOTS', ...slots);
        }),
      );
      for (const server of this.servers.slice(1)) await admins[0].cluster('MEET', server.host, server.port);
      const deadline = Date.now() + timeoutMs;
      let last = '';
      for (;;) {
        const infos = await Promise.all(admins.map((a) => a.cluster('INFO') as Promise<string>));
        if (infos.every((info) => info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${admins.length}`))) return;
        last = infos.map((info) => /cluster_state:\w+/.exec(info)?.[0]).join(', ');
        if (Date.now() > deadline) throw new Error(`The private Redis Cluster (ports ${this.ports().join(', ')}) was not ok within ${timeoutMs} ms: ${last}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  }

  /** The nodes' ports. */
  ports(): number[] {
    return this.servers.map((s) => s.port);
  }

  /** An ioredis `Cluster` on these nodes (the caller disconnects it). */
  client(options: ConstructorParameters<typeof Cluster>[1] = {}): Cluster {
    return new Cluster(
      this.servers.map((s) => ({ host: s.host, port: s.port })),
      options,
    );
  }

  /** A stream key for each node, in node order: `<prefix>-<n>` whose hash slot that node serves. */
  async keysPerNode(prefix: string): Promise<string[]> {
    const per = Math.ceil(SLOTS / this.servers.length);
    const admin = new Redis({ host: this.host, port: this.servers[0].port });
    try {
      const keys: Array<string | undefined> = new Array(this.servers.length);
      for (let n = 0; keys.includes(undefined) || keys.length === 0; n++) {
        const key = `${prefix}-${n}`;
        const node = Math.floor(Number(await admin.cluster('KEYSLOT', key)) / per);
        keys[node] ??= key;
        if (n > 1000) throw new Error(`no key "${prefix}-<n>" found for every node`);
      }
      return keys as string[];
    } finally {
      admin.disconnect();
    }
  }

  /** Stops every node and removes the directory of their cluster files. */
  async dispose(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.dispose()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
