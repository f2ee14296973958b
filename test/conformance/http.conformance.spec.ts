import { type DeferredSink, HttpSink } from 'nestjs-deferred-work';
import { HttpReceiver, type ReceivedRequest } from '../support/http-receiver';
import { describeSinkConformance } from '../support/sink-conformance';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * HttpSink against a real local HTTP receiver (test/support/http-receiver.ts), through a TCP proxy
 * that the outage cuts (connections reset, new ones refused) and the black hole silences (connections
 * stay up, nothing passes). The receiver stores the items of the POSTs it answers 2xx, and answers
 * 422 to any POST that carries a poison mark (the whole POST is refused, nothing of it is stored).
 *
 * The receiver does not deduplicate. When the outage resets a connection after the receiver stored a
 * POST but before its 2xx came back, the sink sends the same POST again: a duplicate, as
 * docs/sinks/http.md says ("the receiver may see duplicates"), hence `duplicatesInOutage`. After every
 * test this file checks that each duplicate was such a resend: the same items under the same
 * `Idempotency-Key`, so a receiver that honours the key stores them once.
 *
 * Run twice: in-process, and offloaded to a worker thread (the built
 * `dist/worker/sink-host.worker.js`: run `pnpm build` first).
 */
function describeHttpTarget(name: string, build: (url: string) => DeferredSink): void {
  describe(name, () => {
    let receiver: HttpReceiver;
    let proxy: TcpProxy;
    /** Where this test's requests begin in `receiver.requests` (marks repeat across the file's targets). */
    let since = 0;
    const poisoned = new Set<string>();

    const markOf = (item: unknown) => String((item as { fields?: { mark?: unknown } }).fields?.mark);
    const refuses = (request: ReceivedRequest) => request.items.some((item) => poisoned.has(markOf(item)));
    const stored = () => receiver.requests.slice(since).filter((r) => r.path === '/ingest' && typeof r.reply === 'object' && r.reply.status >= 200 && r.reply.status < 300);

    beforeAll(async () => {
      receiver = await HttpReceiver.start((request) => (refuses(request) ? { status: 422, body: 'unprocessable entry' } : { status: 200 }));
      proxy = new TcpProxy(receiver.port);
      await proxy.listen();
    });
    afterAll(async () => {
      await proxy?.close();
      await receiver?.close();
    });

    // Runs after the suite's own afterEach (the app closed): every POST is in.
    afterEach(() => {
      const keys = new Map<string, Set<string | undefined>>();
      for (const request of stored()) {
        const key = request.headers['idempotency-key'] as string | undefined;
        for (const mark of request.items.map(markOf)) keys.set(mark, (keys.get(mark) ?? new Set()).add(key));
      }
      const twice = stored()
        .flatMap((r) => r.items.map(markOf))
        .filter((mark, i, all) => all.indexOf(mark) !== i);
      // each mark stored twice came both times in a POST of the same key (one key per mark), and keys are never absent
      expect(twice.filter((mark) => keys.get(mark)!.size !== 1 || keys.get(mark)!.has(undefined))).toEqual([]);
    });

    describeSinkConformance({
      name,
      open: () => {
        since = receiver.requests.length;
        poisoned.clear();
        return { sink: build(`http://${proxy.host}:${proxy.port}/ingest`) };
      },
      defer: (work, mark) => work.log('info', 'conformance', { mark }),
      poison: (work, mark) => {
        poisoned.add(mark);
        work.log('info', 'conformance', { mark });
      },
      // What the server stored: the items of the POSTs it answered 2xx (a POST sent twice shows twice).
      received: async () => stored().flatMap((r) => r.items.map(markOf)),
      duplicatesInOutage: true,
      // the cut resets connections (ECONNRESET: "socket hang up", "read ECONNRESET"); a POST cut short by writeTimeoutMs is ETIMEDOUT
      outageCodes: ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE'],
      outage: {
        stop: () => proxy.stop(),
        start: () => proxy.start(),
        get running() {
          return proxy.running;
        },
      },
      blackhole: {
        on: () => proxy.blackhole.on(),
        off: () => proxy.blackhole.off(),
      },
    });
  });
}

describeHttpTarget('HttpSink', (url) => new HttpSink({ url }));
describeHttpTarget('HttpSink.offloaded', (url) => HttpSink.offloaded({ url }));
