/**
 * Compiled by handle-options.types.spec.ts (and by `pnpm typecheck`), never run: the deferred handles'
 * types take the library's options (`when`, `sink`, a client's `jobId`) without a cast, and refuse a
 * misspelt one. Each `@ts-expect-error` must meet an error, or the compile fails (TS2578).
 */
import { Controller, Injectable, Param, Post } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import type BullQueue from 'bull';
import type { Queue } from 'bullmq';
import {
  AfterResponse,
  Deferred,
  type DeferredClient,
  type DeferredJobReceipt,
  DeferredLogger,
  type DeferredMetricHandle,
  type DeferredQueue,
  type DeferredScope,
  InjectDeferredClient,
  InjectDeferredQueue,
} from 'nestjs-deferred-work';

@Injectable()
export class OrdersService {
  constructor(
    @InjectDeferredQueue('mail') private readonly mail: DeferredQueue<Queue>,
    @InjectDeferredQueue('legacy') private readonly legacy: DeferredQueue<BullQueue.Queue<{ orderId: string }>>,
    @InjectDeferredQueue('plain') private readonly plain: DeferredQueue,
    @InjectDeferredClient('EVENTS') private readonly events: DeferredClient<ClientProxy>,
  ) {}

  async bullmq(orderId: string): Promise<string> {
    const receipt: DeferredJobReceipt = await this.mail.add('confirm', { orderId }, { when: 'always', attempts: 3, jobId: `confirm-${orderId}` });
    await this.mail.add('confirm', { orderId }, { sink: 'bullmq', deduplication: { id: orderId } });
    await this.mail.addBulk([{ name: 'a', data: 1, opts: { when: 'failure', priority: 2 } }, { name: 'b', data: 2 }]);
    // @ts-expect-error a misspelt library option
    await this.mail.add('confirm', { orderId }, { whenn: 'always' });
    // @ts-expect-error not a condition
    await this.mail.add('confirm', { orderId }, { when: 'sometimes' });
    // @ts-expect-error a misspelt BullMQ option
    await this.mail.add('confirm', { orderId }, { atempts: 3 });
    // @ts-expect-error a misspelt option in addBulk
    await this.mail.addBulk([{ name: 'a', data: 1, opts: { whenn: 'always' } }]);
    // @ts-expect-error BullMQ has no add(data, opts): a job needs a name
    await this.mail.add({ orderId }, { when: 'always' });
    // @ts-expect-error add() resolves with a receipt, not a Job: there is nothing to wait for
    await receipt.waitUntilFinished;
    const counts: Promise<Record<string, number>> = this.mail.getJobCounts(); // the real queue's members stay
    void counts;
    return receipt.id;
  }

  async bull(orderId: string): Promise<void> {
    await this.legacy.add('confirm', { orderId }, { when: 'always', attempts: 3 });
    await this.legacy.add({ orderId }, { when: 'failure' }); // Bull 4: a job without a name
    await this.legacy.addBulk([{ data: { orderId }, opts: { when: 'always' } }]);
    // @ts-expect-error a misspelt library option
    await this.legacy.add('confirm', { orderId }, { whenn: 'always' });
    // @ts-expect-error the queue's data type is kept
    await this.legacy.add('confirm', { order: orderId });
  }

  async untyped(orderId: string): Promise<void> {
    await this.plain.add('confirm', { orderId }, { when: 'always', sink: ['bullmq', 'audit'], delay: 1000 });
    // @ts-expect-error a misspelt library option
    await this.plain.add('confirm', { orderId }, { whenn: 'always' });
  }

  emit(orderId: string): void {
    this.events.emit('order.placed', { orderId }, { when: 'always', jobId: `placed-${orderId}` });
    this.events.emit('order.placed', { orderId }).subscribe();
    // @ts-expect-error a misspelt option
    this.events.emit('order.placed', { orderId }, { whenn: 'always' });
    // @ts-expect-error an event always goes to the client's own sink
    this.events.emit('order.placed', { orderId }, { sink: 'other' });
    // @ts-expect-error the deferred handle takes string patterns
    this.events.emit({ cmd: 'placed' }, { orderId });
    void this.events.send('orders.count', {}); // the real client's members stay
  }
}

@Controller('orders')
@AfterResponse()
export class OrdersController {
  @Post(':id')
  async place(
    @Param('id') id: string,
    @Deferred() work: DeferredScope,
    @Deferred.queue('mail') mail: DeferredQueue<Queue>,
    @Deferred.client('EVENTS') events: DeferredClient<ClientProxy>,
    @Deferred.metric('orders_total') orders: DeferredMetricHandle,
    @Deferred.logger() logger: DeferredLogger,
  ) {
    work.job('mail', 'audit', { id }, { when: 'always' });
    await mail.add('confirm', { id }, { when: 'always' });
    events.emit('order.placed', { id }, { when: 'success' });
    orders.inc({ channel: 'web' });
    logger.log('placed', { id });
    // @ts-expect-error a metric handle takes labels and a value, no deferred options
    orders.inc({ channel: 'web' }, 1, { when: 'always' });
    return { id };
  }
}
