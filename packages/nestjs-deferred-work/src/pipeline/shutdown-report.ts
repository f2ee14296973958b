import type { Logger } from '@nestjs/common';
import { errorMessage } from '../core/error-message';
import { settleWithin } from '../core/settle';
import type { ProcessorBase } from './processor/processor-base';

/** What `shutdown()` reports. */
export interface ShutdownReport {
  /** Whether everything pending was delivered (or dead-lettered for cause) before the deadline. */
  drained: boolean;
  /** Items given up on at the deadline, per sink. */
  undelivered: Record<string, number>;
  /**
   * Only when a sink has a disk spool: items left in its spool at the deadline, per sink — not lost,
   * delivered after the next start (they are not in `undelivered`).
   */
  spooled?: Record<string, number>;
  /**
   * Of `undelivered`, per sink, the items whose write was still in flight when the deadline passed
   * (dead-lettered `shutdown-in-flight`: they may have been delivered). Absent when there were none.
   */
  inFlight?: Record<string, number>;
}

/**
 * The end of one sink at shutdown, once its processor has drained: the sink's own `shutdown()`, given
 * what is left of `deadline` and at least a second, then its spool closed. Returns what its spool keeps
 * for the next start and what the disk refused to write (lost).
 */
export async function closeSink(name: string, processor: ProcessorBase, deadline: number, logger: Logger): Promise<{ spooled: number; lostOnClose: number }> {
  // A sink's own shutdown (closing a connection to a dead server, say) gets what is left of the
  // deadline, and at least a second; it never holds the application's shutdown longer.
  const allowed = Math.max(1000, deadline - Date.now());
  const closed = await settleWithin(Promise.resolve().then(() => processor.sink.shutdown?.()), allowed, true);
  if (closed.status !== 'fulfilled') {
    logger.warn(
      closed.status === 'pending'
        ? `Sink "${name}" did not shut down within ${allowed} ms; going on without it.`
        : `Sink "${name}" shutdown failed.`,
    );
  }
  if (!processor.spool) return { spooled: 0, lostOnClose: 0 };
  const left = processor.spool.leftForNextStart;
  const lostOnClose = await processor.spool.close().catch((error: unknown) => {
    logger.error(`Spool of sink "${name}" could not be closed: ${errorMessage(error)}`);
    return 0;
  });
  if (lostOnClose > 0) {
    // Accepted, but the disk refused to write them to the end: not in the spool, gone with the process.
    logger.error(`Spool of sink "${name}": ${lostOnClose} item(s) could not be written to ${processor.spool.dir} (the disk refused) and are lost.`);
  }
  return { spooled: left - lostOnClose, lostOnClose };
}

/** Logs what the shutdown left: items kept by spools (a warning), items given up on (an error). Returns the report. */
export function reportShutdown(
  logger: Logger,
  shutdownTimeoutMs: number,
  undelivered: Record<string, number>,
  spooled: Record<string, number>,
  withSpools: boolean,
  /** Where dead letters are kept (`DeadLetterStore.description`), and whether that outlives the process. */
  store?: { description: string; durable: boolean },
  /** Of `undelivered`, per sink, the items whose write was in flight at the deadline (they may have been delivered). */
  inFlight: Record<string, number> = {},
): ShutdownReport {
  const spooledTotal = Object.values(spooled).reduce((a, b) => a + b, 0);
  if (spooledTotal > 0) {
    const per = Object.entries(spooled).map(([n, c]) => `${n}: ${c}`).join(', ');
    logger.warn(
      `Shutdown deadline (${shutdownTimeoutMs} ms) passed with ${spooledTotal} items undelivered in spooled sinks (${per}); ` +
        'they stay in the spool and are delivered after the next start.',
    );
  }
  const lostTotal = Object.values(undelivered).reduce((a, b) => a + b, 0);
  if (lostTotal > 0) {
    const per = Object.entries(undelivered).map(([n, c]) => `${n}: ${c}`).join(', ');
    const cut = Object.values(inFlight).reduce((a, b) => a + b, 0);
    const split =
      cut === 0
        ? ''
        : ` — ${lostTotal - cut} never sent, and ${cut} in a write still in flight (${Object.entries(inFlight).filter(([, c]) => c > 0).map(([n, c]) => `${n}: ${c}`).join(', ')}), which may have been delivered (reason "shutdown-in-flight": a redrive may deliver them twice)`;
    const kept = !store
      ? 'they were dead-lettered and are lost with the process: no dead-letter store keeps them'
      : store.durable
        ? `they were dead-lettered and kept in the ${store.description} store: redrive them once the destination is back`
        : `they were dead-lettered into the ${store.description} store, which does not outlive the process: give the module a spool or a SQL or Redis Stream dead-letter store to keep them`;
    logger.error(`Shutdown deadline (${shutdownTimeoutMs} ms) passed with ${lostTotal} items undelivered (${per})${split}; ${kept}. Raise shutdownTimeoutMs or check the sinks.`);
  }
  const drained = lostTotal === 0 && spooledTotal === 0;
  const report: ShutdownReport = withSpools ? { drained, undelivered, spooled } : { drained, undelivered };
  if (Object.values(inFlight).some((c) => c > 0)) report.inFlight = inFlight;
  return report;
}
