import { Logger } from '@nestjs/common';
import type { ItemOutcome } from '../core/intake.interface';
import type { DeferredItem } from '../core/items/deferred-item.interface';
import { settleWithin } from '../core/settle';
import type { Dispatcher } from '../pipeline/dispatcher';
import { clearItemDeadline, itemBudgets, setItemDeadline } from '../pipeline/item-budgets';
import { itemWatch } from '../pipeline/item-watch';
import { Invocation, type InvocationReport, reportLine } from './invocation';

/** How many released request ids are remembered: an INVOKE event comes at most one invocation late. */
const RECENT_RELEASES = 64;

/** An item's deliveries still owed, and the invocations waiting for them. */
interface Owed {
  owed: number;
  invocations: Invocation[];
}

/** Which invocations an item accepted now belongs to; `undefined`: none (it is not tracked). */
export type Attribution = (item: DeferredItem) => Invocation[] | undefined;

/**
 * @internal
 * Tracks each invocation's deferred work, once installed: every item the dispatcher accepts while an
 * invocation is open belongs to it (with Lambda's one invocation per environment at a time, the one open;
 * if several are open, to each of them, with the earliest deadline), gets the invocation's deadline budget
 * (`item-budgets.ts`), and is counted settled on each of its outcomes (`item-watch.ts`). Items accepted
 * while none is open (during Init) belong to the next one. On Vercel, an {@link Attribution} by request
 * context replaces the open-invocation rule.
 */
export class InvocationTracker {
  private readonly open = new Map<string, Invocation>();
  private readonly owedBy = new WeakMap<object, Owed>();
  private orphans: DeferredItem[] = [];
  private readonly orphanDispatchers = new Set<Dispatcher>();
  private installed = false;
  /** The request ids of the last invocations released, oldest first (an INVOKE that comes after its release holds nothing). */
  private readonly recentlyReleased = new Set<string>();
  /** The extension's release bound of each invocation it holds. */
  private readonly deadlineTimers = new WeakMap<Invocation, NodeJS.Timeout>();
  private readonly logger = new Logger('DeferredWork');
  /** Set by the Vercel mode. */
  attribution: Attribution | undefined;

  /** Starts observing the dispatchers' items and their outcomes (idempotent). */
  install(): void {
    if (this.installed) return;
    this.installed = true;
    itemBudgets.observe = (item, source) => this.observe(item, source as Dispatcher);
    itemWatch.listen((item, outcome) => this.outcome(item, outcome));
  }

  /**
   * The open invocation `requestId` as a handler wrapper begins it, opened now (deadline epoch ms, less
   * `marginMs` for the work) if it is not. The wrapper's margin is final: an invocation the extension
   * opened first (its INVOKE came before the handler ran) takes it.
   */
  begin(requestId: string, deadline: number, marginMs: number, label = 'Lambda invocation'): Invocation {
    const invocation = this.open.get(requestId);
    if (!invocation) return this.opened(new Invocation(requestId, deadline, deadline - marginMs, label), true);
    if (!invocation.marginFixed) {
      invocation.marginFixed = true;
      this.rebudget(invocation, invocation.deadline - marginMs);
    }
    return invocation;
  }

  /**
   * The invocation of the extension's INVOKE event: opened now with the extension's margin, until the
   * handler wrapper's begin gives its own; `undefined` when the wrapper has released it already (its
   * handler returned and its work settled before the INVOKE reached the extension): nothing to hold.
   */
  beginInvoke(requestId: string, deadline: number, marginMs: number): Invocation | undefined {
    if (this.recentlyReleased.has(requestId)) return undefined;
    return this.open.get(requestId) ?? this.opened(new Invocation(requestId, deadline, deadline - marginMs, 'Lambda invocation'), false);
  }

  private opened(invocation: Invocation, marginFixed: boolean): Invocation {
    invocation.marginFixed = marginFixed;
    this.open.set(invocation.requestId, invocation);
    this.adoptOrphans(invocation);
    return invocation;
  }

  /** Opens an invocation that no other open one shares items with (Vercel: one per request). */
  beginAlone(requestId: string, deadline: number, marginMs: number, label: string): Invocation {
    const invocation = new Invocation(requestId, deadline, deadline - marginMs, label);
    this.open.set(requestId, invocation);
    return invocation;
  }

  /**
   * The handler returned: settles the invocation's work — exported at once, within its deadline
   * budget — and resolves with the report once released (idempotent).
   */
  end(invocation: Invocation): Promise<InvocationReport> {
    invocation.handlerDone();
    void this.release(invocation);
    return invocation.report;
  }

  /** Releases `invocation` at its `releaseBy` at the latest, whether or not its handler returned (the extension's bound). */
  releaseByDeadline(invocation: Invocation): Promise<InvocationReport> {
    this.armDeadline(invocation);
    void invocation.report.then(() => {
      clearTimeout(this.deadlineTimers.get(invocation));
      this.deadlineTimers.delete(invocation);
    });
    return invocation.report;
  }

  private armDeadline(invocation: Invocation): void {
    clearTimeout(this.deadlineTimers.get(invocation));
    this.deadlineTimers.set(invocation, setTimeout(() => void this.release(invocation), Math.max(0, invocation.releaseBy - Date.now())));
  }

  /** Moves the end of `invocation`'s budget (the wrapper's margin replacing the extension's): its items' deadlines and its release bound follow. */
  private rebudget(invocation: Invocation, budgetEnd: number): void {
    if (budgetEnd === invocation.budgetEnd) return;
    invocation.budgetEnd = budgetEnd;
    for (const item of invocation.items) {
      const owed = this.owedBy.get(item);
      if (!owed) continue;
      clearItemDeadline(item);
      setItemDeadline(item, Math.min(...owed.invocations.map((i) => i.budgetEnd)));
    }
    if (this.deadlineTimers.has(invocation)) this.armDeadline(invocation);
  }

  private observe(item: DeferredItem, dispatcher: Dispatcher): void {
    const invocations = this.attribution ? this.attribution(item) : [...this.open.values()].filter((i) => !i.released);
    if (invocations === undefined) return;
    if (item.kind === 'callback') {
      for (const invocation of invocations) {
        invocation.callbacks++;
        invocation.dispatchers.add(dispatcher);
      }
      if (invocations.length === 0) this.orphanDispatchers.add(dispatcher);
      return;
    }
    const target = item.sink ?? dispatcher.options.routing[item.kind];
    const owed = typeof target === 'string' ? 1 : target.length;
    if (owed === 0) return;
    this.owedBy.set(item, { owed, invocations });
    if (invocations.length === 0) {
      this.orphans.push(item);
      this.orphanDispatchers.add(dispatcher);
      return;
    }
    let budgetEnd = Number.POSITIVE_INFINITY;
    for (const invocation of invocations) {
      invocation.owe(owed);
      invocation.items.add(item);
      invocation.dispatchers.add(dispatcher);
      budgetEnd = Math.min(budgetEnd, invocation.budgetEnd);
    }
    setItemDeadline(item, budgetEnd);
  }

  private outcome(item: DeferredItem, outcome: ItemOutcome): void {
    const owed = this.owedBy.get(item);
    if (!owed) return;
    owed.owed--;
    for (const invocation of owed.invocations) invocation.settle(outcome);
    if (owed.owed > 0) return;
    for (const invocation of owed.invocations) invocation.items.delete(item);
    this.owedBy.delete(item);
    clearItemDeadline(item);
  }

  /** Items accepted while no invocation was open become the new invocation's, with its deadline. */
  private adoptOrphans(invocation: Invocation): void {
    for (const dispatcher of this.orphanDispatchers) invocation.dispatchers.add(dispatcher);
    this.orphanDispatchers.clear();
    for (const item of this.orphans) {
      const owed = this.owedBy.get(item);
      if (!owed) continue;
      owed.invocations.push(invocation);
      invocation.owe(owed.owed);
      invocation.items.add(item);
      setItemDeadline(item, invocation.budgetEnd);
    }
    this.orphans = [];
  }

  private readonly releasing = new WeakMap<Invocation, Promise<void>>();

  private rememberReleased(requestId: string): void {
    this.recentlyReleased.add(requestId);
    // A Set iterates in insertion order: the oldest goes first.
    if (this.recentlyReleased.size > RECENT_RELEASES) this.recentlyReleased.delete(this.recentlyReleased.values().next().value as string);
  }

  private release(invocation: Invocation): Promise<void> {
    let done = this.releasing.get(invocation);
    if (!done) this.releasing.set(invocation, (done = this.runRelease(invocation)));
    return done;
  }

  /**
   * Exports everything now (no linger) and waits until the invocation's deliveries settled — or its
   * budget ended and its expired items were dead-lettered or kept — then for the dead-letter store's
   * writes, all by `releaseBy`; logs what was not delivered, and resolves the report.
   */
  private async runRelease(invocation: Invocation): Promise<void> {
    const dispatchers = [...invocation.dispatchers];
    const flushes = Promise.all(dispatchers.map((d) => d.flush(Math.max(1, invocation.budgetEnd - Date.now())))).then((all) => all.every(Boolean));
    flushes.catch(() => undefined);
    // After the budget's end, half of what is left before releaseBy for the expiries; the rest for the store.
    const graceEnd = invocation.budgetEnd + (invocation.releaseBy - invocation.budgetEnd) / 2;
    const settled = await invocation.whenSettled(graceEnd - Date.now());
    let callbacksDone = invocation.callbacks === 0;
    if (!callbacksDone) {
      const flushed = await settleWithin(flushes, graceEnd - Date.now());
      callbacksDone = flushed.status === 'fulfilled' && flushed.value === true;
    }
    let unstored = 0;
    for (const dispatcher of [...invocation.dispatchers]) unstored += await dispatcher.deadLetterDesk.stored(invocation.releaseBy - Date.now());
    invocation.released = true;
    this.open.delete(invocation.requestId);
    this.rememberReleased(invocation.requestId);
    const report = invocation.toReport(callbacksDone, unstored, !settled || Date.now() >= invocation.budgetEnd);
    const line = reportLine(report, invocation.label);
    if (line !== undefined) this.logger.warn(line);
    invocation.resolveReport(report);
  }
}

/** @internal The process's tracker (on `globalThis`: both builds share it). */
export function invocationTracker(): InvocationTracker {
  const holder = globalThis as Record<symbol, InvocationTracker | undefined>;
  return (holder[Symbol.for('nestjs-deferred-work.invocation-tracker')] ??= new InvocationTracker());
}
