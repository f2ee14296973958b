import type { INestApplicationContext } from '@nestjs/common';
import type { TestingModuleBuilder } from '@nestjs/testing';
import { DEFERRED_WORK_MODULE_OPTIONS } from '../nest/deferred-work.module-definition';
import { DeferredWork } from '../nest/deferred-work.service';
import { Dispatcher } from '../pipeline/dispatcher';
import type { SinkItem } from '../core/items/deferred-item.interface';
import type { DeferredWorkModuleOptions } from '../nest/options/module-options.interface';
import { resolveOptions } from '../nest/options/resolve-options';
import type { DeferredSink } from '../core/sink.interface';
import { MemorySink } from '../sinks/memory/memory.sink';

/** Options of {@link withMemorySinks}. */
export interface MemorySinksOptions {
  /**
   * Run deferred work at once, in the handler's turn, instead of after the response (Laravel's
   * `withoutDefer()`): every `job`/`log`/`metric` is written to its memory sink when called, and a
   * `run(fn)` callback's synchronous part runs before the call returns. `when` does not filter in this
   * mode (there is no outcome yet). Default `false`.
   */
  inline?: boolean;
}

/**
 * Replaces every configured sink with a `MemorySink` of the same name (so routing stays valid) in a
 * testing module, keeping all other options. Use with `Test.createTestingModule(...)`:
 *
 * ```ts
 * const moduleRef = await withMemorySinks(Test.createTestingModule({ imports: [AppModule] })).compile();
 * ```
 */
export function withMemorySinks(builder: TestingModuleBuilder, options: MemorySinksOptions = {}): TestingModuleBuilder {
  return builder.overrideProvider(Dispatcher).useFactory({
    inject: [DEFERRED_WORK_MODULE_OPTIONS],
    factory: (configured: DeferredWorkModuleOptions) => {
      const replaced = configured.sinks?.length ? configured.sinks : [new MemorySink()];
      // The real sinks are never written to; let them release what they hold (agents, connections).
      for (const sink of replaced as DeferredSink[]) void Promise.resolve().then(() => sink.shutdown?.()).catch(() => undefined);
      const sinks = replaced.map((sink) => new MemorySink({ name: sink.name }));
      // Never the app's disk spool: a test must not replay (and ack away) what a real run left there,
      // nor hold its lock.
      const sinkOptions = Object.fromEntries(Object.entries(configured.sinkOptions ?? {}).map(([name, { spool: _spool, ...rest }]) => [name, rest]));
      return new Dispatcher(resolveOptions({ ...configured, sinks, sinkOptions, spool: undefined, deadLetter: undefined }), undefined, options.inline ?? false);
    },
  });
}

/**
 * What a test needs to look at deferred work in an app built with {@link withMemorySinks}.
 *
 * ```ts
 * const deferred = DeferredWorkTesting.from(app);
 * await request(app.getHttpServer()).post('/orders').expect(201);
 * await deferred.settled();
 * expect(deferred.items('job')).toMatchObject([{ queue: 'mail', name: 'order-confirmation' }]);
 * ```
 */
export class DeferredWorkTesting {
  private constructor(
    private readonly work: DeferredWork,
    private readonly dispatcher: Dispatcher,
  ) {}

  /** The testing view of an app or testing module. */
  static from(app: INestApplicationContext): DeferredWorkTesting {
    return new DeferredWorkTesting(app.get(DeferredWork, { strict: false }), app.get(Dispatcher, { strict: false }));
  }

  /** The memory sink standing in for the sink of that name (default: the sink jobs are routed to). */
  sink(name: string = firstOf(this.dispatcher.options.routing.job)): MemorySink {
    const sink = this.dispatcher.options.sinks.get(name);
    if (!(sink instanceof MemorySink)) {
      const known = [...this.dispatcher.options.sinks.keys()];
      throw new Error(
        `DeferredWorkTesting: no memory sink named "${name}" (sinks: ${known.join(', ')}). ` +
          'Build the testing module with withMemorySinks(Test.createTestingModule(...)).',
      );
    }
    return sink;
  }

  /** Every item delivered to any sink, optionally of one kind, in delivery order per sink. */
  items<K extends SinkItem['kind']>(kind?: K): Extract<SinkItem, { kind: K }>[] {
    const all: SinkItem[] = [];
    for (const sink of this.dispatcher.options.sinks.values()) {
      if (sink instanceof MemorySink) all.push(...sink.items);
    }
    return (kind ? all.filter((item) => item.kind === kind) : all) as Extract<SinkItem, { kind: K }>[];
  }

  /**
   * Waits until every decorated request has ended and all deferred work accepted by then has been
   * delivered (or dead-lettered). Rejects after `timeoutMs` (default `5000`) saying what is pending.
   */
  async settled(timeoutMs = 5000): Promise<void> {
    if (await this.work.settled(timeoutMs)) return;
    const stats = this.work.stats();
    throw new Error(
      `DeferredWorkTesting: not settled after ${timeoutMs} ms: ${stats.requests.open} request(s) still open, ` +
        `${stats.pending} item(s) pending.`,
    );
  }

  /** Forget delivered items in every memory sink. */
  clear(): void {
    for (const sink of this.dispatcher.options.sinks.values()) if (sink instanceof MemorySink) sink.clear();
  }
}

/** The first sink of a routing target (one name, or several with fan-out). */
function firstOf(target: string | readonly string[]): string {
  return typeof target === 'string' ? target : target[0];
}
