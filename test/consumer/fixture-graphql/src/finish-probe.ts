// Test harness only: records, at the moment each response finishes, what the library had accepted
// and delivered so far and how many items the memory sinks held, so the consumer test can prove the
// work deferred by a resolver ran after the HTTP response of its GraphQL request.
import type { DeferredWork, MemorySink } from 'nestjs-deferred-work';

export interface FinishProbe {
  method: string;
  url: string;
  status: number;
  acceptedAtFinish: number;
  deliveredAtFinish: number;
  sinkItemsAtFinish: number;
}

export const finishProbes: FinishProbe[] = [];

interface RequestLike {
  method?: string;
  url?: string;
  originalUrl?: string;
}

interface ResponseLike {
  statusCode: number;
  once(event: 'finish', listener: () => void): unknown;
}

/** An Express middleware that snapshots the library's counters when each response finishes. */
export function finishProbe(work: DeferredWork, sinks: MemorySink[]) {
  return (req: RequestLike, res: ResponseLike, next: () => void): void => {
    const url = req.originalUrl ?? req.url ?? '';
    res.once('finish', () => {
      const stats = work.stats();
      finishProbes.push({
        method: req.method ?? '',
        url,
        status: res.statusCode,
        acceptedAtFinish: stats.accepted,
        deliveredAtFinish: stats.delivered,
        sinkItemsAtFinish: sinks.reduce((n, sink) => n + sink.items.length, 0),
      });
    });
    next();
  };
}
