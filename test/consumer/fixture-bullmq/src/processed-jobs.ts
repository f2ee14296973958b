// Test harness only: what the app's @Processor ran, for the consumer test to read over HTTP.
import { Injectable } from '@nestjs/common';
import type { Job } from 'bullmq';

export interface ProcessedJob {
  id: string | undefined;
  queue: string;
  name: string;
  data: unknown;
  attempts: number | undefined;
}

@Injectable()
export class ProcessedJobs {
  /** Every run of the "mail" processor, in order (a job run twice shows twice). */
  readonly runs: ProcessedJob[] = [];
  /** Every run of the "audit" processor (jobs added by the offloaded sink's worker thread). */
  readonly audit: ProcessedJob[] = [];

  record(job: Job, into: ProcessedJob[] = this.runs): void {
    into.push({ id: job.id, queue: job.queueName, name: job.name, data: job.data, attempts: job.opts.attempts });
  }
}
