// Test harness only: wraps the AppModule with an undecorated route reporting what was processed.
import { getQueueToken } from '@nestjs/bullmq';
import { Controller, Get, Module } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { DeferredWork } from 'nestjs-deferred-work';
import { BULLMQ_SINK_NAME, bullMqQueueToken } from 'nestjs-deferred-work/bullmq';
import { AppModule } from './app.module.js';
import { finishProbes } from './finish-probe.js';
import { ProcessedJobs } from './processed-jobs.js';

@Controller('__consumer')
export class ConsumerCheckController {
  // Plain constructor injection: resolved through the consumer's own emitDecoratorMetadata.
  constructor(
    private readonly work: DeferredWork,
    private readonly processed: ProcessedJobs,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** The queue @nestjs/bullmq registered, found as the sink finds it. */
  private get queue(): Queue {
    return this.moduleRef.get<Queue>(getQueueToken('mail'), { strict: false });
  }

  @Get('processed')
  async report() {
    return {
      processed: this.processed.runs,
      audit: this.processed.audit,
      stats: this.work.stats(),
      probes: finishProbes,
      sinkName: BULLMQ_SINK_NAME,
      // The sink's default queue token is the one @nestjs/bullmq registers the queue under.
      queueTokenMatches: bullMqQueueToken('mail') === getQueueToken('mail'),
      queue: { name: this.queue.name, counts: await this.queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed') },
    };
  }
}

@Module({ imports: [AppModule], controllers: [ConsumerCheckController] })
export class ConsumerCheckModule {}
