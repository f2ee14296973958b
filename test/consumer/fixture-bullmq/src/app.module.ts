// app.module.ts — the setup of docs/sinks/bullmq.md: a queue registered with @nestjs/bullmq, jobs
// added to it through its deferred handle (@InjectDeferredQueue, in place of @InjectQueue) on an
// @AfterResponse() route, written by BullMqSink after the response, and a real @Processor consuming them.
// (Redis port, key prefix and spool directory come from the consumer test.)
import { BullModule, Processor, WorkerHost } from '@nestjs/bullmq';
import { Controller, Module, Param, Post } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { AfterResponse, Deferred, type DeferredScope, DeferredWorkModule, InjectDeferredQueue, MemorySink } from 'nestjs-deferred-work';
import { BullMqSink } from 'nestjs-deferred-work/bullmq';
import { ProcessedJobs } from './processed-jobs.js';

@Controller('orders')
export class OrdersController {
  // The queue's deferred handle: what was @InjectQueue('mail'). Its add() resolves at once.
  constructor(@InjectDeferredQueue('mail') private readonly mail: Queue) {}

  @Post(':id')
  @AfterResponse()
  async place(@Param('id') id: string, @Deferred() work: DeferredScope) {
    // Added to the "mail" queue after the response has finished, batched with other requests' jobs.
    await this.mail.add('order-confirmation', { orderId: id }, { jobId: `order-confirmation-${id}`, attempts: 3 });
    work.log('info', 'order placed', { orderId: id });
    // Added by BullMqSink.offloaded() from its worker thread (its own queue on its own connection).
    work.job('audit', 'order-audit', { orderId: id }, { sink: 'audit-jobs' });
    return { id };
  }
}

@Processor('mail')
export class MailProcessor extends WorkerHost {
  constructor(private readonly processed: ProcessedJobs) {
    super();
  }

  async process(job: Job): Promise<void> {
    this.processed.record(job);
  }
}

@Processor('audit')
export class AuditProcessor extends WorkerHost {
  constructor(private readonly processed: ProcessedJobs) {
    super();
  }

  async process(job: Job): Promise<void> {
    this.processed.record(job, this.processed.audit);
  }
}

const connection = { host: '127.0.0.1', port: Number(process.env.CONSUMER_REDIS_PORT) };

@Module({
  imports: [
    BullModule.forRoot({
      connection,
      prefix: process.env.CONSUMER_BULLMQ_PREFIX,
    }),
    BullModule.registerQueue({ name: 'mail' }, { name: 'audit' }),
    DeferredWorkModule.forRoot({
      // Jobs go to the BullMQ sink (it takes jobs only, and finds the registered queues by DI); logs
      // and metrics to the first sink that takes them.
      sinks: [
        new BullMqSink(),
        new MemorySink({ name: 'telemetry' }),
        BullMqSink.offloaded({ name: 'audit-jobs', connection, prefix: process.env.CONSUMER_BULLMQ_PREFIX, queues: ['audit'] }),
      ],
      // The audit jobs survive a crash: spooled to disk until BullMQ has them (docs/durability.md).
      sinkOptions: { 'audit-jobs': { spool: { dir: process.env.CONSUMER_SPOOL_DIR ?? 'deferred-spool' } } },
    }),
  ],
  controllers: [OrdersController],
  providers: [MailProcessor, AuditProcessor, ProcessedJobs],
  exports: [ProcessedJobs],
})
export class AppModule {}
