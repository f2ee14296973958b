import type { DeadLetter } from '../core/dead-letter.interface';
import { errorMessage } from '../core/error-message';
import type { ProcessorBase } from './processor/processor-base';
import type { ResolvedDeferredWorkOptions } from './resolved-options.interface';
import type { RateLimitedLogger } from './warnings/rate-limited-logger';

/**
 * @internal
 * Where dead letters go: the ring `DeferredWork.deadLetters()` reads (the last `deadLetterCapacity`),
 * one rate-limited warning per sink, and the `deadLetter` option — a handler, or a fallback sink
 * through its own processor.
 */
export class DeadLetters {
  private readonly ring: DeadLetter[] = [];

  constructor(
    private readonly options: Pick<ResolvedDeferredWorkOptions, 'deadLetterCapacity' | 'deadLetter'>,
    private readonly warnings: RateLimitedLogger,
    private readonly processors: ReadonlyMap<string, ProcessorBase>,
  ) {}

  /** Recent dead letters, oldest first. */
  recent(): readonly DeadLetter[] {
    return [...this.ring];
  }

  add(letters: DeadLetter[]): void {
    if (letters.length === 0) return; // e.g. shutdown() after the export loop already buried everything
    const capacity = this.options.deadLetterCapacity;
    if (capacity > 0) {
      for (const letter of letters) this.ring.push(letter);
      if (this.ring.length > capacity) this.ring.splice(0, this.ring.length - capacity);
    }
    const first = letters[0];
    // Items deferred after shutdown get their own warning (the dispatcher's refused()).
    if (first.reason !== 'closed') this.warn(letters);
    this.forward(letters);
  }

  private warn(letters: DeadLetter[]): void {
    const first = letters[0];
    this.warnings.warn(
      `dead:${first.sink}`,
      `${letters.length} item(s) for sink "${first.sink}" dead-lettered (${first.reason}` +
        `${first.error ? `: ${first.error}` : ''}). See DeferredWork.deadLetters() and stats().`,
    );
  }

  private forward(letters: DeadLetter[]): void {
    const target = this.options.deadLetter;
    if (target === undefined) return;
    if (typeof target === 'string') {
      // Through the fallback sink's own processor: one writer per sink, its retries and accounting.
      // Its own dead letters are not forwarded again (no loops); callbacks have nowhere to go.
      // The fallback's own check runs first, as for any item handed to it (it may also prepare the
      // item); an item it refuses stays a dead letter here.
      const fallback = this.processors.get(target)!;
      for (const letter of letters) {
        if (letter.sink === target || letter.item.kind === 'callback') continue;
        try {
          fallback.sink.validate?.(letter.item);
        } catch (error) {
          this.warnings.warn('dead-letter-forward', `A dead letter was not forwarded to sink "${target}": ${errorMessage(error)}`);
          continue;
        }
        fallback.enqueue(letter.item);
      }
      // The dead letters' own records are already confirmed in their sink's spool: a spooled fallback
      // writes them now, not at the end of the turn, so a crash in between cannot lose them.
      fallback.spool?.writeNow();
      return;
    }
    Promise.resolve()
      .then(() => target(letters))
      .catch((error: unknown) =>
        this.warnings.warn(
          'dead-letter-handler',
          `Dead-letter handler failed: ${error instanceof Error ? error.message : String(error)}; the letters stay in DeferredWork.deadLetters().`,
        ),
      );
  }
}
