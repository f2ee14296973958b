import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeadLetterPage, DeadLetterRecord, DeferredStats } from 'nestjs-deferred-work';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { load, range } from '../support/load';
import { compileFixture, NodeApp } from '../support/node-app';

/**
 * Dead letters that outlive the process, with real processes (test/fixtures/dead-letters.app.ts, the
 * example of docs/dead-letters.md): an HTTP sink with a spool and maxAttempts 2 dead-letters what its
 * receiver refuses into the file store under the spool directory; the app is killed with SIGKILL; a
 * new process on the same directory lists every dead letter through the controller (behind the app's
 * guard) and redrives them to the receiver, recovered: each arrives exactly once, with its item id.
 */

const N = 30;
const TOKEN = 'crash-admin-token';
let fixture: string;
const apps: NodeApp[] = [];
let dir: string;
let receiver: HttpReceiver;

beforeAll(() => {
  fixture = compileFixture('dead-letters.app');
});
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dw-dead-letters-'));
  receiver = await HttpReceiver.start(() => ({ status: 503 }));
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    app.kill();
    await app.exited;
  }
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(adapter: string) {
  const child = new NodeApp(fixture, { ADAPTER: adapter, RECEIVER_URL: receiver.url('/ingest'), SPOOL_DIR: dir, ADMIN_TOKEN: TOKEN });
  apps.push(child);
  const { port } = await child.json<{ port: number }>('port', 20_000);
  const url = `http://127.0.0.1:${port}`;
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${url}/admin/dead-letters${path}`, {
      ...init,
      headers: { 'x-admin-token': TOKEN, ...(init.body ? { 'content-type': 'application/json' } : {}) },
    });
  return {
    child,
    url,
    admin,
    stats: async () => (await (await fetch(`${url}/stats`)).json()) as DeferredStats,
    count: async () => ((await (await admin('/count')).json()) as { count: number }).count,
  };
}

describe.each(['express', 'fastify'])('dead letters across kill -9 on %s', (adapter) => {
  it('are listed after the restart and redriven, each delivered exactly once to the recovered receiver', async () => {
    const first = await start(adapter);
    const statuses = await load(first.url, range(0, N).map((n) => `/job/${n}`), 10);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    await eventually(async () => expect(await first.count()).toBe(N), 15_000, 50);
    expect((await first.stats()).sinks.http).toMatchObject({ accepted: N, delivered: 0, deadLettered: N, pending: 0 });
    expect((await fetch(`${first.url}/admin/dead-letters/count`)).status).toBe(403);
    const offered = new Set(receiver.requests.flatMap((request) => (request.items as Array<{ id: string }>).map((item) => item.id)));
    expect(offered.size).toBe(N);
    first.child.signal('SIGKILL');
    expect(await first.child.exited).toEqual({ code: null, signal: 'SIGKILL' });

    receiver.responder = () => ({ status: 200 });
    const second = await start(adapter);
    const listed: DeadLetterRecord[] = [];
    let after: string | undefined;
    do {
      const page = (await (await second.admin(`?limit=7${after ? `&after=${after}` : ''}`)).json()) as DeadLetterPage;
      listed.push(...page.records);
      after = page.next;
    } while (after);
    expect(listed).toHaveLength(N);
    expect(new Set(listed.map((record) => record.item.id))).toEqual(offered);
    for (const record of listed) {
      expect(record).toMatchObject({ sink: 'http', reason: 'attempts-exhausted', attempts: 2, redrives: 0, lastError: { code: '503' } });
      expect(record.lastError!.message).toMatch(/answered 503/);
    }
    // Nothing was delivered by the restart itself: the sink's spool had acked them as dead letters.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.delivered('/ingest')).toEqual([]);

    const res = await second.admin('/redrive', { method: 'POST', body: JSON.stringify({ filter: { sink: 'http' } }) });
    expect(await res.json()).toEqual({ dryRun: false, matched: N, redriven: N, skipped: [] });
    await receiver.waitForDelivered(N, '/ingest');
    await eventually(async () => expect((await second.stats()).sinks.http).toMatchObject({ accepted: N, redriven: N, delivered: N, pending: 0, deadLettered: 0 }), 10_000, 50);
    await new Promise((resolve) => setTimeout(resolve, 200)); // room for a duplicate, were there one
    const ids = (receiver.delivered('/ingest') as Array<{ id: string }>).map((item) => item.id);
    expect(ids).toHaveLength(N);
    expect(new Set(ids)).toEqual(offered);
    expect(await second.count()).toBe(0);
  });
});
