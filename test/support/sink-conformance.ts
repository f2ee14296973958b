import { Controller, Get, type DynamicModule, type ModuleMetadata, Param, type Provider } from '@nestjs/common';
import {
  AfterResponse,
  Deferred,
  type DeferredScope,
  type DeferredSink,
  DeferredWork,
  DeferredWorkModule,
  type DeferredSinkOptions,
  MemorySink,
} from 'nestjs-deferred-work';
import { eventually } from './eventually';
import { identityHolds, load, range, watchIdentity } from './load';
import { failOnUnhandledRejection, type Platform, platforms, startApp, type StartedApp } from './platforms';

/**
 * The sink conformance suite (Vector's sink compliance tests are the model): every sink runs the same
 * cases against its real server, on Express and Fastify. A target says how to build the sink, how a
 * handler defers one item carrying a unique mark, and how a real consumer reads the marks back; the
 * optional parts (a poison entry, an outage, a link that answers nothing) add their cases. What every
 * case checks besides its own point: the accounting identity, sampled throughout, and no unhandled
 * rejection in the whole file.
 */
export interface ConformanceTarget {
  /** The sink under test, e.g. `BullMqSink on a private Redis`. */
  name: string;
  /**
   * Per test: a fresh sink and what the app needs for it to find its client by DI (modules that
   * register queues or clients, providers), plus what to release after the test.
   */
  open(): Promise<OpenedTarget> | OpenedTarget;
  /** Defers one item carrying `mark` through the request's scope (it names the sink, or its queue routes to it). */
  defer(work: DeferredScope, mark: string): void;
  /** The marks the server holds now, read back by a real consumer (one per entry received: duplicates show). */
  received(): Promise<string[]>;
  /** Defers an item carrying `mark` that the server refuses for good (only that entry must be dead-lettered). */
  poison?(work: DeferredScope, mark: string): void;
  /** Takes the server (or the link to it) down and brings it back. */
  outage?: { stop(): Promise<void>; start(): Promise<void>; readonly running: boolean };
  /** Makes the link answer nothing (a black hole) and restores it: the write's signal must end the write. */
  blackhole?: { on(): Promise<void>; off(): Promise<void> };
  /**
   * Entries the sink may deliver twice by design during an outage (a reply lost with the connection,
   * and a server that does not check the ids the sink sends): documented duplicates, counted and
   * printed. Default `false`: none — for a queue, that also shows nothing was parked in a client's
   * offline buffer and sent again later.
   */
  duplicatesInOutage?: boolean;
  /**
   * With an `outage`: the codes its failures may carry (`stats().sinks[name].lastErrorCode`, a dead
   * letter's `code`) — the client's or the server's (`ECONNRESET`, `57P01`), or the library's own for
   * what it refused to send (`ENOTCONN`: the client is not connected) or cut short (`ETIMEDOUT`).
   */
  outageCodes?: readonly string[];
  /**
   * More dispatcher settings of the short-budget outage case, for an outage that answers nothing (a
   * paused broker): a `writeTimeoutMs` that lets the budget run out within seconds. Default none.
   */
  shortBudgetOptions?: DeferredSinkOptions;
  /** Dispatcher settings for the sink in these tests (short backoffs by default, the sink's own defaults in the outage cases). */
  sinkOptions?: DeferredSinkOptions;
}

/** What a target's `open()` gives one test. */
export interface OpenedTarget {
  sink: DeferredSink;
  imports?: Array<DynamicModule | (new () => unknown)>;
  providers?: Provider[];
  /** Releases what the target opened for this test (after the app closed). */
  close?(): Promise<void>;
}

const COUNT = 100;

/** Retries of the cases that are not about an outage: quick, so that a retry never holds a test up. */
const SHORT_BACKOFFS: DeferredSinkOptions = { initialBackoffMs: 20, maxBackoffMs: 200 };

/** Fails, saying what it got, unless the sink's `lastErrorCode` is one of `codes`. */
function expectLastErrorCode(work: DeferredWork, sinkName: string, codes: readonly string[]): void {
  const { lastErrorCode, lastError } = work.stats().sinks[sinkName];
  if (lastErrorCode === undefined || !codes.includes(lastErrorCode)) {
    throw new Error(`stats().sinks.${sinkName}.lastErrorCode is ${String(lastErrorCode)}, not one of ${codes.join(', ')} (lastError: ${lastError})`);
  }
}

/** The codes a target declares for its outage, checked to be there. */
function outageCodesOf(target: ConformanceTarget): readonly string[] {
  if (!target.outageCodes || target.outageCodes.length === 0) throw new Error(`${target.name}: a target with an outage declares its outageCodes`);
  return target.outageCodes;
}

@Controller()
class ConformanceController {
  static target: ConformanceTarget;

  @Get('defer/:mark')
  @AfterResponse()
  defer(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    ConformanceController.target.defer(work, mark);
    return { mark };
  }

  @Get('poison/:mark')
  @AfterResponse()
  poison(@Param('mark') mark: string, @Deferred() work: DeferredScope) {
    ConformanceController.target.poison!(work, mark);
    return { mark };
  }
}

/** Runs the conformance cases for `target` on both adapters. */
export function describeSinkConformance(target: ConformanceTarget): void {
  failOnUnhandledRejection();
  describe.each(platforms)(`${target.name} conforms ($name)`, (platform: Platform) => {
    let run = 0;
    let started: StartedApp | undefined;
    let opened: OpenedTarget | undefined;
    const prefix = target.name.replace(/\W+/g, '_');
    const marks = (n: number, tag: string) => range(0, n).map((i) => `${tag}-${prefix}-${platform.name}-${++run}-${i}`);

    /** Starts the app; `retries: 'default'` keeps the dispatcher's (and the sink's) retry settings as a user gets them. */
    async function start(extra: DeferredSinkOptions = {}, retries: 'short' | 'default' = 'short'): Promise<{ work: DeferredWork; url: string; sinkName: string }> {
      ConformanceController.target = target;
      opened = await target.open();
      const sinkName = opened.sink.name;
      const metadata: ModuleMetadata = {
        imports: [
          ...(opened.imports ?? []),
          DeferredWorkModule.forRoot({
            // the routing default: the sink under test for the kinds it takes, the rest to a memory sink
            sinks: [opened.sink, new MemorySink({ name: 'conformance-rest' })],
            sinkOptions: { [sinkName]: { flushIntervalMs: 5, ...(retries === 'short' ? SHORT_BACKOFFS : {}), ...target.sinkOptions, ...extra } },
            shutdownTimeoutMs: 10_000,
          }),
        ],
        controllers: [ConformanceController],
        providers: opened.providers ?? [],
      };
      started = await startApp(platform, metadata);
      return { work: started.app.get(DeferredWork), url: started.url, sinkName };
    }

    afterEach(async () => {
      await started?.close();
      started = undefined;
      await opened?.close?.();
      opened = undefined;
      if (target.outage && !target.outage.running) await target.outage.start();
      if (target.blackhole) await target.blackhole.off();
    });

    it(`${COUNT} requests give ${COUNT} entries, each read back once by a real consumer`, async () => {
      const { work, url, sinkName } = await start();
      const sent = marks(COUNT, 'n');
      const watched = watchIdentity(work, load(url, sent.map((m) => `/defer/${m}`), 20), sinkName);
      const { broken } = await watched;
      expect(broken).toEqual([]);
      await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: COUNT, delivered: COUNT, pending: 0 }), 15_000);
      expect(countBy(await target.received(), sent)).toEqual({ missing: [], twice: [] });
      expect(identityHolds(work.stats(), sinkName)).toBe(true);
    }, 60_000);

    if (target.poison) {
      it('one bad entry among good ones: only it is dead-lettered, with the server’s reason, and the rest are written once', async () => {
        const { work, url, sinkName } = await start({ flushIntervalMs: 50 });
        const good = marks(19, 'g');
        const [bad] = marks(1, 'p');
        await Promise.all([load(url, good.slice(0, 10).map((m) => `/defer/${m}`), 10), load(url, [`/poison/${bad}`], 1)]);
        await load(url, good.slice(10).map((m) => `/defer/${m}`), 10);
        await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: 20, delivered: 19, deadLettered: 1, pending: 0 }), 15_000);
        const letters = work.deadLetters().filter((l) => l.sink === sinkName);
        expect(letters).toHaveLength(1);
        expect(letters[0]).toMatchObject({ reason: 'not-retryable', attempts: 1 }); // refused for good, not retried to exhaustion
        expect(letters[0].error).toBeTruthy();
        const received = await target.received();
        expect(received).not.toContain(bad);
        expect(countBy(received, good)).toEqual({ missing: [], twice: [] });
      }, 60_000);
    }

    if (target.outage) {
      it('the server down mid-load and back: every response 2xx, every entry delivered, none twice (unless the transport documents it), the identity exact throughout', async () => {
        const outage = target.outage!;
        const codes = outageCodesOf(target);
        // the dispatcher's default retries (no short backoffs, no attempts cap): what a user's app rides an outage with
        const { work, url, sinkName } = await start({}, 'default');
        const sent = marks(150, 'o');
        const steps: Promise<void>[] = [];
        const statuses = load(url, sent.map((m) => `/defer/${m}`), 5, (done) => {
          if (done === 40) steps.push(outage.stop());
          if (done === 100) {
            const felt = async () => {
              if (!(work.stats().sinks[sinkName].failedWrites > 0)) throw new Error('the sink has not felt the outage yet');
            };
            steps.push(Promise.all(steps).then(() => eventually(felt, 10_000)).then(() => outage.start()));
          }
        });
        const { broken, checks } = await watchIdentity(work, statuses, sinkName);
        await Promise.all(steps);
        expect((await statuses).every((s) => s === 200)).toBe(true);
        expect(broken).toEqual([]);
        expect(checks).toBeGreaterThan(0);
        await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: 150, delivered: 150, pending: 0, deadLettered: 0 }), 30_000).catch((error) => { throw new Error(`${(error as Error).message}\nlast error: ${work.stats().sinks[sinkName].lastError}`); });
        const counted = countBy(await target.received(), sent);
        expect(counted.missing).toEqual([]);
        if (target.duplicatesInOutage) {
          if (counted.twice.length > 0) console.log(`[${target.name}/${platform.name}] outage: ${counted.twice.length} duplicate deliveries (documented for this transport)`);
        } else {
          expect(counted.twice).toEqual([]);
        }
        // the outage's failures kept their code
        expectLastErrorCode(work, sinkName, codes);
      }, 90_000);

      it('an outage past a short retry budget dead-letters with reason `expired` and the error code; the sink delivers once the server is back', async () => {
        const outage = target.outage!;
        const codes = outageCodesOf(target);
        const { work, url, sinkName } = await start({ ...target.shortBudgetOptions, maxRetryDurationMs: 1500 }, 'default');
        const [warm] = marks(1, 'x');
        await load(url, [`/defer/${warm}`], 1);
        await eventually(async () => expect(work.stats().sinks[sinkName].delivered).toBe(1), 15_000);
        await outage.stop();
        const lost = marks(3, 'e');
        expect(await load(url, lost.map((m) => `/defer/${m}`), 3)).toEqual([200, 200, 200]);
        await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: 4, delivered: 1, deadLettered: 3, pending: 0 }), 20_000);
        // each letter: expired, with an outage code, and its first error's code when it was tried more than once
        const known = (code: string | undefined) => code !== undefined && codes.includes(code);
        const letters = work.deadLetters().filter((l) => l.sink === sinkName);
        const seen = letters.map(({ reason, code, attempts, firstError, error }) => ({ reason, code, attempts, firstError, error, ok: reason === 'expired' && known(code) && (attempts === 1 || known(firstError?.code)) }));
        expect(seen).toHaveLength(3);
        expect(seen.filter((letter) => !letter.ok)).toEqual([]);
        expectLastErrorCode(work, sinkName, codes);
        await outage.start();
        // Back: a new item is delivered. One deferred before the client has reconnected (its reconnect
        // backoff may be longer than the 1.5 s budget) may be dead-lettered too: then another is sent.
        let after: string | undefined;
        for (let tries = 0; after === undefined && tries < 10; tries++) {
          const [mark] = marks(1, 'a');
          const { accepted, delivered } = work.stats().sinks[sinkName];
          await load(url, [`/defer/${mark}`], 1);
          await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: accepted + 1, pending: 0 }), 20_000);
          if (work.stats().sinks[sinkName].delivered > delivered) after = mark;
        }
        expect(after).toBeDefined();
        expect(await target.received()).toContain(after);
      }, 60_000);
    }

    if (target.blackhole) {
      it('a link that answers nothing: the write ends by its timeout (the signal is honoured), and the entry is delivered once the link is back', async () => {
        const hole = target.blackhole!;
        const { work, url, sinkName } = await start({ writeTimeoutMs: 300 });
        const [warm] = marks(1, 'w');
        await load(url, [`/defer/${warm}`], 1);
        await eventually(async () => expect(work.stats().sinks[sinkName].delivered).toBe(1), 15_000);
        await hole.on();
        const [mark] = marks(1, 'b');
        await load(url, [`/defer/${mark}`], 1);
        const began = Date.now();
        await eventually(async () => expect(work.stats().sinks[sinkName].failedWrites).toBeGreaterThan(0), 10_000);
        // the timeout (300 ms) and the grace after it (at most 300 ms here), with room for a busy machine
        expect(Date.now() - began).toBeLessThan(3000);
        // the failure keeps a code: ETIMEDOUT for what the timeout cut short, or an outage code once the client saw the link dead
        expectLastErrorCode(work, sinkName, ['ETIMEDOUT', ...(target.outageCodes ?? [])]);
        await hole.off();
        await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: 2, delivered: 2, pending: 0 }), 30_000);
        expect((await target.received()).filter((m) => m === mark).length).toBeGreaterThanOrEqual(1);
      }, 60_000);
    }

    it('a backlog at shutdown is delivered before app.close() resolves (the client held open through the drain)', async () => {
      const { work, url, sinkName } = await start({ flushIntervalMs: 60_000, maxBatchSize: 1000 });
      const sent = marks(50, 's');
      await load(url, sent.map((m) => `/defer/${m}`), 10);
      await eventually(async () => expect(work.stats().sinks[sinkName]).toMatchObject({ accepted: 50, delivered: 0 }));
      await started!.close();
      started = undefined;
      const stats = work.stats();
      expect(stats.sinks[sinkName]).toMatchObject({ accepted: 50, delivered: 50, pending: 0, deadLettered: 0 });
      expect(countBy(await target.received(), sent)).toEqual({ missing: [], twice: [] });
    }, 60_000);
  });
}

/** Which of `sent` are missing from `received`, and which arrived more than once. */
function countBy(received: string[], sent: string[]): { missing: string[]; twice: string[] } {
  const counts = new Map<string, number>();
  for (const mark of received) counts.set(mark, (counts.get(mark) ?? 0) + 1);
  return { missing: sent.filter((m) => !counts.has(m)), twice: sent.filter((m) => (counts.get(m) ?? 0) > 1) };
}
