import type { ItemOutcome } from '../core/intake.interface';
import type { DeferredItem } from '../core/items/deferred-item.interface';
import type { Dispatcher } from '../pipeline/dispatcher';

/** What became of one invocation's deferred work when it was released (its environment may freeze after). */
export interface InvocationReport {
  /** The invocation's request id (Lambda's `awsRequestId`; on Vercel, one per request). */
  requestId: string;
  /** Deliveries owed: one per item and sink it is routed to (callbacks not included). */
  deliveries: number;
  delivered: number;
  /** Dead-lettered: past the deadline (`expired`), refused by the destination, or after shutdown. */
  deadLettered: number;
  /** Kept by a sink's spool on disk (delivered later by this environment, if it lives). */
  kept: number;
  dropped: number;
  rejected: number;
  /** Owed and not settled at the release: still queued or in flight when the environment may freeze. */
  pending: number;
  /** `run()` callbacks deferred, and whether all of them had finished at the release. */
  callbacks: number;
  callbacksDone: boolean;
  /** Dead letters whose store write had not finished at the release. */
  unstored: number;
  /** When the handler returned, and when the work was released (epoch ms). */
  handlerDoneAt: number | undefined;
  releasedAt: number;
  /** Whether the release came at the deadline budget's end rather than when the work had settled. */
  atDeadline: boolean;
}

/** @internal One invocation (or, on Vercel, one request) and the deferred work attributed to it. */
export class Invocation {
  /** Deliveries owed and not settled yet. */
  owed = 0;
  deliveries = 0;
  readonly outcomes: Record<ItemOutcome, number> = { delivered: 0, 'dead-lettered': 0, kept: 0, dropped: 0, rejected: 0 };
  callbacks = 0;
  readonly dispatchers = new Set<Dispatcher>();
  /** Its items still owed (their deadlines follow its budget's end). */
  readonly items = new Set<DeferredItem>();
  /** Whether its margin is the handler wrapper's (final), rather than the extension's (until the wrapper's comes). */
  marginFixed = false;
  handlerDoneAt: number | undefined;
  released = false;
  /** Resolves with the report once released. */
  readonly report: Promise<InvocationReport>;
  resolveReport!: (report: InvocationReport) => void;
  private wake: (() => void) | undefined;

  constructor(
    readonly requestId: string,
    /** Its deadline (epoch ms): the function's timeout. */
    readonly deadline: number,
    /** When its deferred work stops (epoch ms): `deadline` less the margin. */
    public budgetEnd: number,
    /** How its log line names it (`Lambda invocation`, `Vercel request`). */
    readonly label: string,
  ) {
    this.report = new Promise((resolve) => (this.resolveReport = resolve));
  }

  /** The latest moment it is released (epoch ms): after the budget's end, time to store dead letters. */
  get releaseBy(): number {
    return this.deadline - Math.min(100, Math.floor((this.deadline - this.budgetEnd) / 5));
  }

  /** Whether every delivery owed has settled and the handler has returned. */
  get settled(): boolean {
    return this.owed === 0 && this.handlerDoneAt !== undefined;
  }

  owe(deliveries: number): void {
    this.owed += deliveries;
    this.deliveries += deliveries;
  }

  settle(outcome: ItemOutcome): void {
    this.outcomes[outcome]++;
    this.owed--;
    if (this.settled) this.wake?.();
  }

  handlerDone(): void {
    this.handlerDoneAt ??= Date.now();
    if (this.settled) this.wake?.();
  }

  /** Resolves once settled, or after `ms`. */
  whenSettled(ms: number): Promise<boolean> {
    if (this.settled) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), Math.max(0, ms));
      const done = (settled: boolean) => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve(settled);
      };
      this.wake = () => done(true);
    });
  }

  toReport(callbacksDone: boolean, unstored: number, atDeadline: boolean): InvocationReport {
    const o = this.outcomes;
    return {
      requestId: this.requestId,
      deliveries: this.deliveries,
      delivered: o.delivered,
      deadLettered: o['dead-lettered'],
      kept: o.kept,
      dropped: o.dropped,
      rejected: o.rejected,
      pending: this.owed,
      callbacks: this.callbacks,
      callbacksDone,
      unstored,
      handlerDoneAt: this.handlerDoneAt,
      releasedAt: Date.now(),
      atDeadline,
    };
  }
}

/**
 * The one line logged for an invocation whose work was not all delivered by its release (written
 * before the release, so that the platform keeps it with the invocation's logs); `undefined` when all was.
 */
export function reportLine(report: InvocationReport, where: string): string | undefined {
  const missing = report.deliveries - report.delivered;
  if (missing === 0 && report.callbacksDone && report.unstored === 0) return undefined;
  const parts = [
    `${report.deadLettered} dead-lettered (see DeferredWork.deadLetters() and the dead-letter store)`,
    `${report.kept} kept by a spool on this environment's disk`,
    `${report.pending} still queued or in flight`,
  ];
  if (report.dropped > 0) parts.push(`${report.dropped} dropped (queue full)`);
  if (report.rejected > 0) parts.push(`${report.rejected} rejected`);
  if (!report.callbacksDone) parts.push('run() callbacks still running');
  if (report.unstored > 0) parts.push(`${report.unstored} dead-letter store write(s) not finished`);
  const when = report.atDeadline ? 'at the end of its deadline budget' : 'at its release';
  return `${where} ${report.requestId}: ${missing} of ${report.deliveries} deferred deliveries not delivered ${when}: ${parts.join('; ')}. See docs/serverless.md.`;
}
