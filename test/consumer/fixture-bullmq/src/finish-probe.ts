// Test harness only: records, at the moment each response finishes, what the BullMQ sink had
// accepted and the processor had run so far, so the consumer test can prove the job was handed to
// the library only after the response.
import type { DeferredWork } from 'nestjs-deferred-work';
import type { ProcessedJobs } from './processed-jobs.js';

export interface FinishProbe {
  method: string;
  url: string;
  status: number;
  acceptedAtFinish: number;
  processedAtFinish: number;
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

/** An Express middleware that snapshots the counters when each response finishes. */
export function finishProbe(work: DeferredWork, processed: ProcessedJobs) {
  return (req: RequestLike, res: ResponseLike, next: () => void): void => {
    const url = req.originalUrl ?? req.url ?? '';
    res.once('finish', () => {
      finishProbes.push({
        method: req.method ?? '',
        url,
        status: res.statusCode,
        acceptedAtFinish: work.stats().sinks.bullmq?.accepted ?? 0,
        processedAtFinish: processed.runs.length,
      });
    });
    next();
  };
}
