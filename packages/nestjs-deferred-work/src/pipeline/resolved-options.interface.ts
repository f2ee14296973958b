import type { ResolvedCorrelation } from '../core/correlation-options.interface';
import type { DeadLetterHandler } from '../core/dead-letter.interface';
import type { DeadLetterStore } from '../core/dead-letter-store.interface';
import type { DeferredKind, RunWhen, SinkKind, SinkTarget } from '../core/items/deferred-item.interface';
import type { DeferredSink, SinkProcessorOptions } from '../core/sink.interface';
import type { CallbackRunnerOptions } from './callbacks/callback-runner.options';
import type { SinkSpoolSettings } from './processor/sink-spool';

/** Options with every default applied, as the library uses them. */
export interface ResolvedDeferredWorkOptions {
  sinks: ReadonlyMap<string, DeferredSink>;
  /** Each kind's sink, or sinks (a copy to each). */
  routing: Readonly<Record<SinkKind, SinkTarget>>;
  processorOptions: ReadonlyMap<string, SinkProcessorOptions>;
  /** The disk spool of each sink that has one (the `spool` option), by sink name. */
  spools?: ReadonlyMap<string, SinkSpoolSettings>;
  callbacks: Readonly<CallbackRunnerOptions>;
  when: Readonly<Record<DeferredKind, RunWhen>>;
  asyncContext: boolean;
  timing: boolean;
  shutdownTimeoutMs: number;
  /** Drain on a `SIGTERM` or `SIGINT` nothing else listens for (the `drainOnSignal` option). */
  drainOnSignal: boolean;
  maxItemBytes: number;
  /** Most bytes of items held in memory over every sink (`maxTotalQueueBytes`). */
  maxTotalQueueBytes: number;
  /** Where dead letters are forwarded: a handler, or a sink's name. */
  deadLetter?: DeadLetterHandler | string;
  deadLetterCapacity: number;
  /** Where dead letters are kept for listing and redrive (`undefined`: nowhere but the ring). */
  deadLetterStore?: DeadLetterStore;
  /** Default rate of a redrive, items per second. */
  redrivePerSecond: number;
  /** `undefined` when `correlation: false`. */
  correlation?: ResolvedCorrelation;
}
